"""What every public ``torch.cuda`` name becomes while the shim is active (data, no code).

Statuses:

* ``map``: the ``torch.npu`` counterpart (same name unless given), device arguments translated;
  if the backend does not provide it, calling it raises an error naming the API;
* ``emulate``: ascend-compat provides the behaviour itself (detail says how);
* ``unsupported``: an error naming the API and what to do instead (detail is that advice);
* ``keep``: torch's own object stays (harmless without CUDA; detail says why).

A name in the installed torch's ``torch.cuda.__all__`` that is missing here is treated as ``map``
when ``torch.npu`` has it and ``unsupported`` otherwise; ``tests/cuda_shim`` checks that every name
of the installed torch gets a working status. ``docs_table()`` renders this table for the docs.
"""
from __future__ import annotations

MAP, EMULATE, UNSUPPORTED, KEEP = "map", "emulate", "unsupported", "keep"

_SAME = None  # map to the same name on torch.npu

#: legacy type name (``torch.cuda.<Name>``) -> dtype attribute name on torch
LEGACY_TENSOR_TYPES = {
    "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16", "ByteTensor": "uint8", "CharTensor": "int8",
    "ShortTensor": "int16", "IntTensor": "int32", "LongTensor": "int64", "BoolTensor": "bool",
}
#: torch.cuda names torch_npu spells differently (torch.npu.<value>)
RENAMED = {"CUDAGraph": "NPUGraph", "CUDAPluggableAllocator": "NPUPluggableAllocator", "cudart": "npurt",
           "nvtx": "mstx"}
_LEGACY = tuple(name[:-len("Tensor")] for name in LEGACY_TENSOR_TYPES)

CUDA_NAMES: dict[str, tuple[str, str | None]] = {
    # device management
    "is_available": (EMULATE, "torch.npu.is_available(); library detection points see the real CUDA answer"),
    "is_initialized": (MAP, _SAME), "init": (MAP, _SAME),
    "device_count": (EMULATE, "torch.npu.device_count(); library detection points see the real CUDA count"),
    "current_device": (MAP, _SAME), "set_device": (MAP, _SAME), "get_device_name": (MAP, _SAME),
    "get_device_capability": (EMULATE, "torch.npu's value, or (8, 0) / ASCEND_COMPAT_DEVICE_CAPABILITY when it is None"),
    "get_device_properties": (EMULATE, "torch.npu's properties plus the CUDA fields scripts read (major, minor, multi_processor_count)"),
    "can_device_access_peer": (MAP, _SAME), "device": (MAP, _SAME), "device_of": (MAP, _SAME),
    "synchronize": (MAP, _SAME), "utilization": (MAP, _SAME), "ipc_collect": (MAP, _SAME),
    "current_blas_handle": (MAP, _SAME), "is_bf16_supported": (MAP, _SAME),
    "cudart": (MAP, RENAMED["cudart"]),
    # streams and events
    "Stream": (MAP, _SAME), "Event": (MAP, _SAME), "ExternalStream": (MAP, _SAME),
    "StreamContext": (MAP, _SAME), "stream": (MAP, _SAME), "set_stream": (MAP, _SAME),
    "current_stream": (MAP, _SAME), "default_stream": (MAP, _SAME),
    "set_sync_debug_mode": (MAP, _SAME), "get_sync_debug_mode": (MAP, _SAME), "streams": (MAP, _SAME),
    "get_stream_from_external": (UNSUPPORTED, "wrap an external NPU stream with torch.npu.ExternalStream"),
    # memory
    "mem_get_info": (MAP, _SAME), "caching_allocator_alloc": (MAP, _SAME),
    "caching_allocator_delete": (MAP, _SAME), "get_per_process_memory_fraction": (MAP, _SAME),
    "set_per_process_memory_fraction": (MAP, _SAME), "empty_cache": (MAP, _SAME),
    "memory_stats": (MAP, _SAME), "memory_stats_as_nested_dict": (MAP, _SAME),
    "reset_accumulated_memory_stats": (MAP, _SAME), "reset_peak_memory_stats": (MAP, _SAME),
    "reset_max_memory_allocated": (MAP, _SAME), "reset_max_memory_cached": (MAP, _SAME),
    "memory_allocated": (MAP, _SAME), "max_memory_allocated": (MAP, _SAME),
    "memory_reserved": (MAP, _SAME), "max_memory_reserved": (MAP, _SAME),
    "memory_cached": (MAP, _SAME), "max_memory_cached": (MAP, _SAME),
    "memory_snapshot": (MAP, _SAME), "memory_summary": (MAP, _SAME), "MemPool": (MAP, _SAME),
    "use_mem_pool": (MAP, _SAME), "get_allocator_backend": (MAP, _SAME),
    "CUDAPluggableAllocator": (MAP, RENAMED["CUDAPluggableAllocator"]), "change_current_allocator": (MAP, _SAME),
    "host_memory_stats": (MAP, _SAME), "host_memory_stats_as_nested_dict": (MAP, _SAME),
    "reset_accumulated_host_memory_stats": (MAP, _SAME), "reset_peak_host_memory_stats": (MAP, _SAME),
    "memory": (KEEP, "submodule; its public functions are mapped one by one"),
    "caching_allocator_enable": (EMULATE, "accepted; the NPU caching allocator stays enabled"),
    "caching_allocator_disabled": (UNSUPPORTED, "the NPU caching allocator cannot be disabled per region; remove the context"),
    "device_memory_used": (EMULATE, "total - free from torch.npu.mem_get_info()"),
    "memory_usage": (UNSUPPORTED, "NVML statistic; use `npu-smi info` or torch.npu.utilization()"),
    "temperature": (UNSUPPORTED, "NVML statistic; use `npu-smi info -t temp`"),
    "power_draw": (UNSUPPORTED, "NVML statistic; use `npu-smi info -t power`"),
    "clock_rate": (UNSUPPORTED, "NVML statistic; use `npu-smi info -t freq`"),
    "list_gpu_processes": (UNSUPPORTED, "NVML process list; use `npu-smi info`"),
    # RNG
    "manual_seed": (MAP, _SAME), "manual_seed_all": (MAP, _SAME), "seed": (MAP, _SAME),
    "seed_all": (MAP, _SAME), "initial_seed": (MAP, _SAME), "get_rng_state": (MAP, _SAME),
    "set_rng_state": (MAP, _SAME), "get_rng_state_all": (MAP, _SAME), "set_rng_state_all": (MAP, _SAME),
    "default_generators": (MAP, _SAME), "random": (KEEP, "submodule; its functions are mapped one by one"),
    # AMP
    "amp": (KEEP, "torch.cuda.amp.autocast/GradScaler/custom_fwd/custom_bwd pass device 'cuda' to torch.amp, which is translated"),
    # graphs
    "CUDAGraph": (EMULATE, "torch.npu.NPUGraph when the backend has it, else an eager stand-in whose replay() raises"),
    "graph": (EMULATE, "torch.npu.graph when available, else runs the captured region eagerly (one warning)"),
    "graph_pool_handle": (EMULATE, "torch.npu.graph_pool_handle when available, else None"),
    "is_current_stream_capturing": (EMULATE, "torch.npu's when available, else False"),
    "make_graphed_callables": (EMULATE, "torch.npu's when available, else returns the callables unchanged (eager, one warning)"),
    "graphs": (KEEP, "submodule; its public names are mapped one by one"),
    # legacy tensor types and storages
    **{f"{t}Tensor": (EMULATE, "builds an npu tensor of that dtype; isinstance checks dtype and device")
       for t in _LEGACY},
    **{f"{t}Storage": (MAP, _SAME) for t in _LEGACY},
    "ComplexFloatStorage": (UNSUPPORTED, "use torch.UntypedStorage(..., device='npu') with a complex64 tensor view"),
    "ComplexDoubleStorage": (UNSUPPORTED, "complex128 is not supported on the NPU; use complex64"),
    # capability / build queries
    "get_arch_list": (EMULATE, "[] (no CUDA architectures on an NPU)"),
    "get_gencode_flags": (EMULATE, "'' (no CUDA architectures on an NPU)"),
    "has_half": (EMULATE, "True"), "has_magma": (EMULATE, "False"),
    "is_tf32_supported": (EMULATE, "True when the backend has HF32 (torch.npu.matmul.allow_hf32), which TF32 switches map to"),
    "current_solver_handle": (UNSUPPORTED, "cuSOLVER handle; linear algebra on the NPU needs no handle"),
    "GreenContext": (UNSUPPORTED, "CUDA green contexts have no NPU counterpart; limit cores with torch.npu.set_device_limit"),
    # errors and status
    "CudaError": (KEEP, "exception class; never raised on the NPU, so `except` clauses are harmless"),
    "DeferredCudaCallError": (KEEP, "exception class; never raised on the NPU"),
    "cudaStatus": (KEEP, "constants only"),
    "check_error": (UNSUPPORTED, "CUDA runtime error codes do not exist on the NPU; errors surface as RuntimeError"),
    # tools and submodules
    "nvtx": (EMULATE, "range_push/range_pop/range/mark go to torch.npu.mstx when available, else do nothing"),
    "profiler": (EMULATE, "start()/stop() do nothing; use torch_npu.profiler for NPU traces"),
    "jiterator": (UNSUPPORTED, "jiterator compiles CUDA C++; write the op with torch operations"),
    "nccl": (UNSUPPORTED, "use torch.distributed with the hccl backend"),
    "sparse": (KEEP, "legacy module, no device code"),
    "tunable": (UNSUPPORTED, "TunableOp is CUDA/ROCm only; remove the tunable calls"),
}


def status(name: str) -> tuple[str, str | None] | None:
    """``(status, detail)`` for ``name``, or None when the table does not mention it."""
    return CUDA_NAMES.get(name)


def docs_table(names: list[str] | None = None) -> str:
    """Markdown table of ``names`` (default: the whole table) with status and detail."""
    rows = ["| torch.cuda name | status | NPU counterpart / what happens |", "| --- | --- | --- |"]
    for name in sorted(names if names is not None else CUDA_NAMES):
        st, detail = CUDA_NAMES.get(name, ("map", None))
        if st == MAP:
            detail = f"torch.npu.{detail or name}"
        rows.append(f"| `{name}` | {st} | {detail} |")
    return "\n".join(rows) + "\n"
