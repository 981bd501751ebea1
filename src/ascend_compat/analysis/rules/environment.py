"""CUDA / NCCL environment variables and their Ascend counterparts (hand-written knowledge, as data).

name -> (rule, handling, Ascend replacement or None, note). Names ending in ``*`` are prefixes.
"""
from __future__ import annotations

ENV_VARS: dict[str, tuple[str, str, "str | None", str]] = {
    "CUDA_VISIBLE_DEVICES": ("cuda-env", "auto", "ASCEND_RT_VISIBLE_DEVICES",
                             "the shim maps it (ids must be ascending on NPU)"),
    "PYTORCH_CUDA_ALLOC_CONF": ("cuda-env", "auto", "PYTORCH_NPU_ALLOC_CONF",
                                "the shim maps it; keys such as expandable_segments carry over"),
    "CUDA_LAUNCH_BLOCKING": ("cuda-env-other", "partial", "ASCEND_LAUNCH_BLOCKING",
                             "synchronous launches for debugging are ASCEND_LAUNCH_BLOCKING=1"),
    "CUDA_DEVICE_ORDER": ("cuda-env-other", "partial", None,
                          "NPU ids are always in bus order; the variable is ignored"),
    "CUDA_DEVICE_MAX_CONNECTIONS": ("cuda-env-other", "partial", None,
                                    "Megatron's overlap setting; no NPU equivalent (MindSpeed handles it)"),
    "CUDA_HOME": ("cuda-extension", "manual", "ASCEND_HOME_PATH",
                  "the CANN toolkit lives under ASCEND_HOME_PATH / ASCEND_TOOLKIT_HOME"),
    "CUDA_PATH": ("cuda-extension", "manual", "ASCEND_HOME_PATH",
                  "the CANN toolkit lives under ASCEND_HOME_PATH / ASCEND_TOOLKIT_HOME"),
    "TORCH_CUDA_ARCH_LIST": ("cuda-extension", "manual", None,
                             "CUDA architectures mean nothing on NPU; AscendC ops target a SoC"),
    "NCCL_SOCKET_IFNAME": ("nccl-env", "partial", "HCCL_SOCKET_IFNAME", ""),
    "NCCL_DEBUG": ("nccl-env", "partial", "ASCEND_GLOBAL_LOG_LEVEL",
                   "HCCL logs through the CANN log (ASCEND_GLOBAL_LOG_LEVEL=1 for INFO)"),
    "NCCL_TIMEOUT": ("nccl-env", "partial", "HCCL_CONNECT_TIMEOUT", "also HCCL_EXEC_TIMEOUT"),
    "NCCL_BUFFSIZE": ("nccl-env", "partial", "HCCL_BUFFSIZE", "HCCL_BUFFSIZE is in MB"),
    "NCCL_IB_DISABLE": ("nccl-env", "partial", "HCCL_INTRA_ROCE_ENABLE", "RoCE is configured per host"),
    "NCCL_P2P_DISABLE": ("nccl-env", "partial", "HCCL_INTRA_PCIE_ENABLE", ""),
    "NCCL_*": ("nccl-env", "partial", None, "no HCCL equivalent; the variable is ignored on NPU"),
    "TORCH_NCCL_*": ("nccl-env", "partial", None, "ProcessGroupNCCL option; HCCL has its own HCCL_* settings"),
}


def lookup(name: str):
    """The table row for an environment variable name, or None."""
    row = ENV_VARS.get(name)
    if row is not None:
        return row
    for key, row in ENV_VARS.items():
        if key.endswith("*") and name.startswith(key[:-1]) and len(name) > len(key) - 1:
            return row
    return None
