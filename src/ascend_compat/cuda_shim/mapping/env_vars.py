"""CUDA / NCCL environment variables and their Ascend counterparts (data, no code).

``ENV_MAP``: CUDA-side name -> (Ascend name, converter name or None). ``NO_EQUIVALENT``: names
that have no Ascend counterpart, with what to do instead; they are warned about once.
Sources: torch_npu and HCCL documentation of the ``HCCL_*`` / ``ASCEND_RT_*`` variables.
"""
from __future__ import annotations

ENV_MAP: dict[str, tuple[str, str | None]] = {
    "CUDA_VISIBLE_DEVICES": ("ASCEND_RT_VISIBLE_DEVICES", "visible_devices"),
    "PYTORCH_CUDA_ALLOC_CONF": ("PYTORCH_NPU_ALLOC_CONF", "alloc_conf"),
    "PYTORCH_ALLOC_CONF": ("PYTORCH_NPU_ALLOC_CONF", "alloc_conf"),
    "NCCL_SOCKET_IFNAME": ("HCCL_SOCKET_IFNAME", None),
    "NCCL_SOCKET_FAMILY": ("HCCL_SOCKET_FAMILY", None),
    "NCCL_BUFFSIZE": ("HCCL_BUFFSIZE", "bytes_to_mb"),
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": ("HCCL_ASYNC_ERROR_HANDLING", None),
    "NCCL_ASYNC_ERROR_HANDLING": ("HCCL_ASYNC_ERROR_HANDLING", None),
    "TORCH_NCCL_BLOCKING_WAIT": ("HCCL_BLOCKING_WAIT", None),
    "NCCL_BLOCKING_WAIT": ("HCCL_BLOCKING_WAIT", None),
    "TORCH_NCCL_DESYNC_DEBUG": ("HCCL_DESYNC_DEBUG", None),
    "NCCL_DETERMINISTIC": ("HCCL_DETERMINISTIC", None),
    "CUDA_LAUNCH_BLOCKING": ("ASCEND_LAUNCH_BLOCKING", None),
}

#: CUDA-side prefix -> advice, for variables with no counterpart
NO_EQUIVALENT: dict[str, str] = {
    "NCCL_DEBUG": "HCCL logs go through ASCEND_GLOBAL_LOG_LEVEL (0=debug .. 3=error) and ASCEND_SLOG_PRINT_TO_STDOUT",
    "NCCL_IB_": "HCCL picks RoCE/HCCS links itself; see HCCL_INTRA_ROCE_ENABLE / HCCL_INTRA_PCIE_ENABLE",
    "NCCL_P2P_": "HCCL chooses intra-node links itself (HCCS)",
    "NCCL_NET_": "no HCCL equivalent",
    "NCCL_ALGO": "HCCL_ALGO exists but takes different values; set it explicitly if needed",
    "NCCL_PROTO": "no HCCL equivalent",
    "NCCL_NVLS_": "NVLink SHARP has no Ascend counterpart",
    "NCCL_CUMEM_": "no HCCL equivalent",
    "CUDA_DEVICE_ORDER": "NPU ids are always PCI-bus ordered",
}

#: keys of PYTORCH_CUDA_ALLOC_CONF that the NPU caching allocator understands
NPU_ALLOC_CONF_KEYS = frozenset({
    "max_split_size_mb", "garbage_collection_threshold", "expandable_segments", "base_addr_aligned_kb",
    "page_size", "pinned_use_background_threads",
})
