"""Every public ``torch.cuda`` name as a :class:`~ascend_compat.knowledge.records.CudaName` record.

Readers: the shim's ``torch.cuda`` namespace (``cuda_shim/patches/cuda_namespace.py`` installs each
record's ``action``), check's ``torch.cuda`` rules (``analysis/rules/cuda_api.py``: rule, verdict,
reason, advice) and through them migrate (``rewrite``), and :func:`docs_table` (the docs page).

A name of the installed torch's ``torch.cuda.__all__`` without a record is treated as ``map`` when
``torch.npu`` has it and ``unsupported`` otherwise. Records without a hand-written example get one
from :func:`example_of` (``map``: the name resolves to the ``torch.npu`` object; ``unsupported``: using
it raises an error naming it; legacy tensor types: the constructor builds an npu tensor).
"""
from __future__ import annotations

from typing import Optional

from ascend_compat.knowledge.records import (AUTO, EMULATE, EVERY, KEEP, MANUAL, MAP, PARTIAL, UNSUPPORTED,
                                             CudaName, Versions)

__all__ = ["MAP", "EMULATE", "UNSUPPORTED", "KEEP", "RECORDS", "CUDA_NAMES", "LEGACY_TENSOR_TYPES", "RENAMED",
           "PRIVATE", "PRIVATE_NAMES", "status", "example_of", "docs_table"]

#: legacy type name (``torch.cuda.<Name>``) -> dtype attribute name on torch
LEGACY_TENSOR_TYPES = {
    "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16", "ByteTensor": "uint8", "CharTensor": "int8",
    "ShortTensor": "int16", "IntTensor": "int32", "LongTensor": "int64", "BoolTensor": "bool",
}
#: torch.cuda names torch_npu spells differently (torch.npu.<value>)
RENAMED = {"CUDAGraph": "NPUGraph", "CUDAPluggableAllocator": "NPUPluggableAllocator", "cudart": "npurt",
           "nvtx": "mstx"}

_API, _CAP, _GRAPH, _AMP = "torch-cuda-api", "device-capability", "cuda-graph", "cuda-amp"
#: torch_npu releases whose torch.npu has the name (the generated API table, ``data.cuda_api_map``, is
#: checked against these ranges by ``tests/knowledge``)
_NPU_2_6, _NPU_2_7, _NPU_2_10 = (Versions(torch_npu=">=2.6"), Versions(torch_npu=">=2.7"),
                                 Versions(torch_npu=">=2.10"))
_CAP_ADVICE = ("test for the feature instead, with torch.npu.is_bf16_supported() or "
               "torch.npu.get_device_name().")


def _map(name: str, verdict: str = AUTO, reason: Optional[str] = None, versions: Versions = EVERY,
         example: Optional[str] = None, expect: Optional[str] = None) -> CudaName:
    npu = "torch.npu." + RENAMED.get(name, name)
    return CudaName(name, MAP, _API, verdict, npu,
                    reason or f"the shim maps it to {npu}, translating CUDA device arguments",
                    f"use {npu}.", example, expect, versions=versions)


def _emulate(name: str, verdict: str, counterpart: Optional[str], reason: str, advice: str, example: str,
             expect: str, rule: str = _API) -> CudaName:
    return CudaName(name, EMULATE, rule, verdict, counterpart, reason, advice, example, expect)


def _keep(name: str, verdict: str, counterpart: Optional[str], reason: str, advice: str, example: str,
          expect: str, rule: str = _API) -> CudaName:
    return CudaName(name, KEEP, rule, verdict, counterpart, reason, advice, example, expect)


def _unsupported(name: str, reason: str, advice: str, fixed: Optional[str] = None,
                 fixed_expect: Optional[str] = None) -> CudaName:
    return CudaName(name, UNSUPPORTED, _API, MANUAL, None, reason, advice, fixed=fixed, fixed_expect=fixed_expect)


def _legacy(short: str) -> CudaName:
    dtype = LEGACY_TENSOR_TYPES[short]
    if dtype == "float64":
        return _emulate(short, PARTIAL, f"torch.npu.{short}",
                        "the shim builds a float64 npu tensor, which most NPU kernels cannot compute "
                        "(the float64 policy WARN or SILENT makes it float32 instead)",
                        "use torch.tensor(data, dtype=torch.float32, device='npu').",
                        "import torch\nfrom ascend_compat.cuda_shim.dtype_manager import apply_dtype_policy\n"
                        "a = torch.cuda.DoubleTensor([1.0])\nbefore = apply_dtype_policy('silent')\n"
                        "b = torch.cuda.DoubleTensor([1.0])\napply_dtype_policy(before)\n"
                        "print(a.device.type, a.dtype, b.dtype)", "npu torch.float64 torch.float32", rule="float64")
    return _emulate(short, AUTO, f"torch.npu.{short}",
                    f"the shim builds an npu tensor of dtype {dtype}; isinstance checks dtype and device",
                    f"use torch.tensor(data, dtype=torch.{dtype}, device='npu').",
                    f"import torch\nt = torch.cuda.{short}([1])\n"
                    f"print(t.device.type, t.dtype, isinstance(t, torch.cuda.{short}))",
                    f"npu torch.{dtype} True", rule="legacy-tensor-type")


_ON_NPU = "torch.ones(1, device='cuda').device.type"
_NO_HANDLE = "import torch\nprint(torch.linalg.inv(torch.eye(2, device='cuda')).device.type)"

RECORDS: tuple[CudaName, ...] = (
    # device management
    _emulate("is_available", AUTO, "torch.npu.is_available",
             "the shim answers torch.npu.is_available(); library detection points still see the real CUDA answer",
             "use torch.npu.is_available().",
             f"import torch\nprint(torch.cuda.is_available(), {_ON_NPU})", "True npu"),
    _emulate("device_count", AUTO, "torch.npu.device_count",
             "the shim answers torch.npu.device_count(); library detection points still see the real CUDA count",
             "use torch.npu.device_count().",
             f"import torch\nprint(torch.cuda.device_count() == torch.npu.device_count(), {_ON_NPU})", "True npu"),
    _map("is_initialized"), _map("init"), _map("current_device"), _map("set_device"), _map("get_device_name"),
    _map("can_device_access_peer"), _map("device"), _map("device_of"), _map("synchronize"), _map("utilization"),
    _map("ipc_collect", versions=_NPU_2_6), _map("current_blas_handle"), _map("is_bf16_supported"),
    _emulate("get_device_capability", PARTIAL, "torch.npu.get_device_capability",
             "torch_npu returns None; the shim returns (8, 0) or ASCEND_COMPAT_DEVICE_CAPABILITY, a made-up "
             "number for code that picks kernels by CUDA architecture", _CAP_ADVICE,
             "import torch\nprint('npu', torch.cuda.get_device_capability())", "npu (8, 0)", rule=_CAP),
    _emulate("get_device_properties", PARTIAL, "torch.npu.get_device_properties",
             "the shim returns torch.npu's properties plus the CUDA fields scripts read (major, minor, "
             "multi_processor_count), filled with NPU or made-up values", _CAP_ADVICE,
             "import torch\np = torch.cuda.get_device_properties(0)\n"
             "print('npu', (p.major, p.minor), p.multi_processor_count > 0)", "npu (8, 0) True", rule=_CAP),
    _emulate("cudart", PARTIAL, "torch.npu.npurt",
             "the shim returns a runtime whose cudaProfilerStart and cudaProfilerStop (Nsight capture ranges) "
             "do nothing, as torch.cuda.profiler.start/stop; its other functions are torch.npu.npurt's "
             "(torch_npu 2.10 and later), the NPU runtime (npuHostRegister, npuStreamCreate), not the CUDA "
             "runtime API", "use torch_npu.profiler (or msprof) for NPU traces.",
             "import torch\nrt = torch.cuda.cudart()\nrt.cudaProfilerStart()\nx = torch.ones(2, device='cuda') * 2\n"
             "rt.cudaProfilerStop()\nprint(x.device.type, 'no capture range')", "npu no capture range"),
    # streams and events
    _map("Stream"), _map("Event"), _map("ExternalStream", versions=_NPU_2_10), _map("StreamContext", versions=_NPU_2_6),
    _map("stream"), _map("set_stream"), _map("current_stream"), _map("default_stream"),
    _map("set_sync_debug_mode"), _map("get_sync_debug_mode"), _map("streams"),
    _unsupported("get_stream_from_external", "torch_npu has no counterpart",
                 "use torch.npu.ExternalStream to wrap an external NPU stream."),
    # memory
    _map("mem_get_info"), _map("caching_allocator_alloc"), _map("caching_allocator_delete"),
    _map("get_per_process_memory_fraction", versions=_NPU_2_7), _map("set_per_process_memory_fraction"),
    _map("empty_cache"), _map("memory_stats"), _map("memory_stats_as_nested_dict"),
    _map("reset_accumulated_memory_stats"), _map("reset_peak_memory_stats"), _map("reset_max_memory_allocated"),
    _map("reset_max_memory_cached"), _map("memory_allocated"), _map("max_memory_allocated"),
    _map("memory_reserved"), _map("max_memory_reserved"), _map("memory_cached"), _map("max_memory_cached"),
    _map("memory_snapshot"), _map("memory_summary"), _map("MemPool"), _map("use_mem_pool"),
    _map("get_allocator_backend"), _map("CUDAPluggableAllocator"), _map("change_current_allocator"),
    _map("host_memory_stats", versions=_NPU_2_7), _map("host_memory_stats_as_nested_dict", versions=_NPU_2_7),
    _map("reset_accumulated_host_memory_stats", versions=_NPU_2_7),
    _map("reset_peak_host_memory_stats", versions=_NPU_2_7),
    _keep("memory", AUTO, "torch.npu.memory",
          "torch's submodule stays; the shim maps its public functions one by one",
          "use torch.npu.memory.",
          f"import torch\nprint(torch.cuda.memory.memory_allocated() == torch.npu.memory_allocated(), {_ON_NPU})",
          "True npu"),
    _emulate("caching_allocator_enable", PARTIAL, None,
             "the shim accepts the call, and the NPU caching allocator stays enabled",
             "remove the call, since the NPU caching allocator is always on.",
             # the simulated NPU has no cache to observe: the example shows the call is accepted
             "import torch\nprint(torch.cuda.caching_allocator_enable(False), torch.ones(4, device='cuda').device.type)",
             "None npu"),
    _unsupported("caching_allocator_disabled", "the NPU caching allocator cannot be disabled for a region",
                 "remove the context, or configure the allocator with PYTORCH_NPU_ALLOC_CONF.",
                 f"import torch\nprint({_ON_NPU})", "npu"),
    _emulate("device_memory_used", PARTIAL, None,
             "the shim computes total minus free from torch.npu.mem_get_info(), not NVML's figure",
             "use torch.npu.mem_get_info().",
             "import torch\nfree, total = torch.npu.mem_get_info()\n"
             "print('npu', torch.cuda.device_memory_used() == total - free)", "npu True"),
    _unsupported("memory_usage", "an NVML statistic, which has no NPU API",
                 "use torch.npu.utilization() or `npu-smi info`.",
                 "import torch\nprint('npu', isinstance(torch.npu.utilization(), int))", "npu True"),
    _unsupported("temperature", "an NVML statistic, which has no NPU API", "run `npu-smi info -t temp` instead."),
    _unsupported("power_draw", "an NVML statistic, which has no NPU API", "run `npu-smi info -t power` instead."),
    _unsupported("clock_rate", "an NVML statistic, which has no NPU API", "run `npu-smi info -t freq` instead."),
    _unsupported("list_gpu_processes", "an NVML process list, which has no NPU API",
                 "run `npu-smi info` to list the processes per NPU."),
    # RNG
    _map("manual_seed"), _map("manual_seed_all"), _map("seed"), _map("seed_all"), _map("initial_seed"),
    _map("get_rng_state"), _map("set_rng_state"), _map("get_rng_state_all"), _map("set_rng_state_all"),
    _map("default_generators"),
    _keep("random", AUTO, "torch.npu.random",
          "torch's submodule stays; the shim maps its functions one by one", "use torch.npu.random.",
          f"import torch\ntorch.cuda.random.manual_seed(3)\nprint(torch.npu.initial_seed(), {_ON_NPU})", "3 npu"),
    # AMP
    _keep("amp", AUTO, "torch.npu.amp",
          "torch.cuda.amp's autocast, GradScaler, custom_fwd and custom_bwd pass device 'cuda' to torch.amp, "
          "which the shim translates", "use torch.npu.amp, as migrate writes it.",
          "import torch\nwith torch.cuda.amp.autocast():\n"
          "    y = torch.ones(2, 2, device='cuda') @ torch.ones(2, 2, device='cuda')\nprint(y.device.type, y.dtype)",
          "npu torch.float16", rule=_AMP),
    # graphs
    _emulate("CUDAGraph", PARTIAL, "torch.npu.NPUGraph",
             "the shim gives torch.npu.NPUGraph, which captures for inference only (else an eager stand-in "
             "whose replay raises)", "use torch.npu.NPUGraph for inference, or run eagerly.",
             "import torch\nprint('npu', torch.cuda.CUDAGraph.__name__)", "npu NPUGraph", rule=_GRAPH),
    _emulate("graph", PARTIAL, "torch.npu.graph",
             "the shim gives torch.npu.graph (inference capture only), else runs the region eagerly with a warning",
             "use torch.npu.graph for inference, or run eagerly.",
             "import torch\nprint('npu', torch.cuda.graph is torch.npu.graph)", "npu True", rule=_GRAPH),
    _emulate("graph_pool_handle", PARTIAL, "torch.npu.graph_pool_handle",
             "the shim gives torch.npu's (inference capture only), else None",
             "use torch.npu.graph_pool_handle for inference graphs.",
             "import torch\nprint('npu', torch.cuda.graph_pool_handle is torch.npu.graph_pool_handle)", "npu True",
             rule=_GRAPH),
    _emulate("is_current_stream_capturing", PARTIAL, "torch.npu.is_current_stream_capturing",
             "the shim gives torch.npu's when available, else a function returning False",
             "use torch.npu.is_current_stream_capturing.",
             "import torch\nprint('npu', torch.cuda.is_current_stream_capturing())", "npu False", rule=_GRAPH),
    _emulate("make_graphed_callables", PARTIAL, "torch.npu.make_graphed_callables",
             "the shim gives torch.npu's (inference capture only), else returns the callables unchanged with "
             "a warning", "use torch.npu.make_graphed_callables for inference, or call the module eagerly.",
             "import torch\nm = torch.nn.Linear(2, 2).cuda()\n"
             "print(m.weight.device.type, torch.cuda.make_graphed_callables is torch.npu.make_graphed_callables)",
             "npu True", rule=_GRAPH),
    _keep("graphs", PARTIAL, "torch.npu.graphs",
          "torch's submodule stays; the shim maps its public names one by one (inference capture only)",
          "use torch.npu.graphs for inference, or run eagerly.",
          "import torch\nprint('npu', torch.cuda.graphs.make_graphed_callables is torch.npu.make_graphed_callables)",
          "npu True", rule=_GRAPH),
    # legacy tensor types and storages
    *(_legacy(short) for short in LEGACY_TENSOR_TYPES),
    *(_map(short[:-len("Tensor")] + "Storage") for short in LEGACY_TENSOR_TYPES),
    _unsupported("ComplexFloatStorage", "torch_npu has no complex storage type",
                 "use a complex64 tensor with device='npu' and its untyped_storage().",
                 "import torch\nt = torch.ones(2, dtype=torch.complex64, device='cuda')\n"
                 "print(t.untyped_storage().device.type)", "npu"),
    _unsupported("ComplexDoubleStorage", "torch_npu has no complex storage type, and complex128 is not supported",
                 "use a complex64 tensor with device='npu'.",
                 "import torch\nt = torch.ones(2, dtype=torch.complex64, device='cuda')\n"
                 "print(t.untyped_storage().device.type)", "npu"),
    # capability / build queries
    _emulate("get_arch_list", PARTIAL, None, "the shim returns [], since an NPU has no CUDA architectures",
             _CAP_ADVICE, "import torch\nprint('npu', torch.cuda.get_arch_list())", "npu []", rule=_CAP),
    _emulate("get_gencode_flags", PARTIAL, None, "the shim returns '', since an NPU has no CUDA architectures",
             _CAP_ADVICE, "import torch\nprint('npu', repr(torch.cuda.get_gencode_flags()))", "npu ''", rule=_CAP),
    _emulate("has_half", PARTIAL, None, "the shim answers True (the NPU computes in float16)",
             "remove the test, since the NPU has float16.", "import torch\nprint('npu', torch.cuda.has_half)",
             "npu True"),
    _emulate("has_magma", PARTIAL, None, "the shim answers False (no MAGMA on the NPU)",
             "remove the test, and use torch.linalg, which runs on the NPU.",
             "import torch\nprint('npu', torch.cuda.has_magma)", "npu False"),
    _emulate("is_tf32_supported", PARTIAL, None,
             "the shim answers whether the backend has HF32 (torch.npu.matmul.allow_hf32), which TF32 switches "
             "map to", "use torch.npu.matmul.allow_hf32 to choose HF32.",
             "import torch\nprint('npu', torch.cuda.is_tf32_supported() == hasattr(torch.npu.matmul, 'allow_hf32'))",
             "npu True"),
    _unsupported("current_solver_handle", "a cuSOLVER handle, which the NPU does not have",
                 "remove the call, since linear algebra on the NPU needs no handle.", _NO_HANDLE, "npu"),
    _unsupported("GreenContext", "CUDA green contexts have no NPU counterpart",
                 "use torch.npu.set_device_limit to limit the cores a process uses."),
    # errors and status
    _keep("CudaError", PARTIAL, None, "torch's exception class stays, and nothing on the NPU raises it",
          "catch RuntimeError for NPU errors.",
          f"import torch\nprint({_ON_NPU}, issubclass(torch.cuda.CudaError, RuntimeError))", "npu True"),
    _keep("DeferredCudaCallError", PARTIAL, None, "torch's exception class stays, and nothing on the NPU raises it",
          "catch RuntimeError for NPU errors.",
          f"import torch\nprint({_ON_NPU}, issubclass(torch.cuda.DeferredCudaCallError, Exception))", "npu True"),
    _keep("cudaStatus", PARTIAL, None, "torch's constants stay, and no NPU call returns them",
          "remove the status comparisons.", f"import torch\nprint({_ON_NPU}, torch.cuda.cudaStatus.SUCCESS)",
          "npu 0"),
    _unsupported("check_error", "CUDA runtime error codes do not exist on the NPU",
                 "remove the call, since NPU errors surface as RuntimeError."),
    # tools and submodules
    _emulate("nvtx", PARTIAL, "torch.npu.mstx",
             "the shim sends range_push, range_pop, range and mark to torch.npu.mstx, which NVIDIA profilers "
             "do not see", "use torch.npu.mstx with msprof or torch_npu.profiler.",
             "import torch\nwith torch.cuda.nvtx.range('step'):\n    x = torch.ones(1, device='cuda')\n"
             "print(x.device.type, torch.cuda.nvtx.range_push('a'), torch.cuda.nvtx.range_pop())", "npu 0 0"),
    _emulate("profiler", PARTIAL, None, "the shim makes start() and stop() do nothing",
             "use torch_npu.profiler for NPU traces.",
             f"import torch\ntorch.cuda.profiler.start()\ntorch.cuda.profiler.stop()\nprint({_ON_NPU}, 'no trace')",
             "npu no trace"),
    _unsupported("jiterator", "jiterator compiles CUDA C++, which the NPU cannot run",
                 "write the op with torch operations.",
                 "import torch\nx = torch.ones(2, device='cuda')\nprint((x * 2 + 1).device.type)", "npu"),
    _unsupported("nccl", "NCCL does not exist on the NPU", "use torch.distributed with the hccl backend.",
                 "import torch.distributed as dist\nprint(dist.is_hccl_available())", "True"),
    _keep("sparse", PARTIAL, None, "torch's legacy module stays; it has no device code",
          "remove the import, since the module is empty.",
          f"import torch\nimport torch.cuda.sparse\nprint({_ON_NPU}, torch.cuda.sparse.__name__)",
          "npu torch.cuda.sparse"),
    _unsupported("tunable", "TunableOp exists for CUDA and ROCm only", "remove the tunable calls."),
)

#: name -> record (the names of ``torch.cuda`` relative to it)
CUDA_NAMES: dict[str, CudaName] = {r.name: r for r in RECORDS}

#: private CUDA bindings of ``torch._C`` that CUDA scripts call and the shim emulates (names relative to
#: ``torch._C``); every other ``torch._C._cuda*`` name is manual for check and untouched by the shim
PRIVATE: tuple[CudaName, ...] = (
    _emulate("_cuda_clearCublasWorkspaces", AUTO, None,
             "the NPU has no cuBLAS workspaces to free, so the shim makes it do nothing (torch_npu's own "
             "clear_cublass_cache does nothing either); memory-measuring code around it runs unchanged",
             "keep it under the shim, and guard it with hasattr(torch._C, '_cuda_clearCublasWorkspaces') in "
             "code that runs without the shim (migrated code).",
             "import torch\nx = torch.ones(4, 4, device='cuda') @ torch.ones(4, 4, device='cuda')\n"
             "torch._C._cuda_clearCublasWorkspaces()\nprint(x.device.type, torch.cuda.memory_allocated() > 0)",
             "npu True"),
)
PRIVATE_NAMES: dict[str, CudaName] = {r.name: r for r in PRIVATE}


def status(name: str) -> Optional[CudaName]:
    """The record of ``torch.cuda.<name>``, or None when no record mentions it."""
    return CUDA_NAMES.get(name)


_RESOLVES = ("import torch\nobj = torch.cuda.{name}\nobj = getattr(obj, '__ascend_compat_real__', obj)\n"
             "while getattr(obj, '__ascend_compat__', False):\n    obj = obj.__wrapped__\n"
             "print('npu' if obj is torch.npu.{npu} else 'not torch.npu.{npu}: ' + repr(obj))")
_REFUSED = ("import torch, types\nobj = torch.cuda.{name}\n"
            "obj.anything if isinstance(obj, types.ModuleType) else obj()\nprint('no error')")


def example_of(rec: CudaName) -> tuple[str, str]:
    """``(code, expect)`` of a record: its own example, or one generated from its action.

    ``map``: the name resolves (through the shim's argument-translating wrapper) to the torch.npu
    object, printing ``npu``; ``unsupported``: using it raises ``CudaApiUnsupportedError`` naming
    ``torch.cuda.<name>``. Other actions have no generated example (a ValueError says so).
    """
    if rec.example is not None:
        return rec.example, rec.expect or ""
    if rec.action == MAP:
        return _RESOLVES.format(name=rec.name, npu=rec.npu_name), "npu"
    if rec.action == UNSUPPORTED:
        return _REFUSED.format(name=rec.name), "CudaApiUnsupportedError"
    raise ValueError(f"torch.cuda.{rec.name} ({rec.action}) needs a hand-written example")


def docs_table(names: Optional[list[str]] = None) -> str:
    """Markdown table of ``names`` (default: every record): shim action, check verdict, counterpart or reason."""
    rows = ["| torch.cuda name | shim | check | NPU counterpart / what happens |", "| --- | --- | --- | --- |"]
    for name in sorted(names if names is not None else CUDA_NAMES):
        rec = CUDA_NAMES.get(name)
        if rec is None:
            rows.append(f"| `{name}` | map | auto | torch.npu.{name} (no record: mapped when torch.npu has it) |")
            continue
        what = rec.counterpart if rec.action == MAP and rec.verdict == AUTO else rec.reason
        rows.append(f"| `{name}` | {rec.action} | {rec.verdict} | {what} |")
    return "\n".join(rows) + "\n"
