"""The rule catalogue: every rule ``check`` can report, as data.

Each rule has a stable id (used in reports, SARIF and ``# ascend-compat: ignore[ID]``), a category,
a default handling and texts. ``handling`` says what happens on Ascend *without* editing the code:

* ``auto``: the ascend-compat runtime shim (``import ascend_compat`` / ``ascend-compat run``)
  translates it; the code runs unchanged (``migrate`` can still make the NPU form explicit);
* ``partial``: it runs, but semantics, numerics or speed differ (the message says how);
* ``manual``: it fails or silently stays on CUDA semantics; the code must change (the suggestion
  names the NPU replacement).

A finding may override the default handling (for example one ``torch.cuda`` name that torch_npu
lacks is ``manual`` while the rule ``torch-cuda-api`` is ``auto``).
"""
from __future__ import annotations

from dataclasses import dataclass

AUTO, PARTIAL, MANUAL = "auto", "partial", "manual"
HANDLINGS = (AUTO, PARTIAL, MANUAL)


@dataclass(frozen=True)
class Rule:
    id: str
    category: str
    handling: str
    title: str
    #: why / what happens on Ascend (used as the rule's help text in SARIF and --list-rules)
    explanation: str
    #: default suggestion naming the NPU form
    suggestion: str


_RULES = [
    # -- devices -------------------------------------------------------------------------------
    Rule("cuda-method", "device", AUTO, "Tensor/Module .cuda() call",
         "The shim maps .cuda() to the current NPU. migrate rewrites it to .npu().",
         "use .npu() (torch_npu) or .to(device) with a device chosen once"),
    Rule("device-string", "device", AUTO, '"cuda" device string',
         'The shim translates "cuda"/"cuda:N" wherever torch takes a device (factories, .to, '
         "torch.device, map_location, autocast, streams...). Arbitrary strings are never touched.",
         'use "npu" / "npu:N"'),
    Rule("device-compare", "device", PARTIAL, "device type compared with \"cuda\"",
         "An npu tensor's device type is npu, so x.device.type == \"cuda\" and \"cuda\" in str(device) "
         "are False on Ascend (with or without the shim) and the code takes its non-CUDA branch. "
         "migrate rewrites the compared string to \"npu\".",
         'compare with "npu" (or use x.device.type != "cpu")'),
    Rule("is-cuda", "device", AUTO, "Tensor.is_cuda",
         "The shim makes is_cuda true for NPU tensors; natively it is False on NPU.",
         "use Tensor.is_npu (torch_npu) or x.device.type == \"npu\""),
    Rule("int-device", "device", AUTO, "integer device ordinal",
         "A bare integer device resolves to the current accelerator on torch >= 2.5 (npu:N with "
         "torch_npu) and the shim translates it at API boundaries; on torch < 2.5 it means cuda:N "
         "and fails (Ascend/pytorch#16).",
         'use an explicit device: torch.device("npu", N)'),
    Rule("legacy-tensor-type", "device", AUTO, "legacy torch.cuda.*Tensor type",
         "torch.cuda.FloatTensor-style constructors and .type('torch.cuda.*Tensor') are mapped by the "
         "shim to torch.npu.*Tensor.",
         "use torch.empty with dtype and device=\"npu\", or torch.npu.FloatTensor"),
    # -- torch.cuda API ---------------------------------------------------------------------
    Rule("torch-cuda-api", "api", AUTO, "torch.cuda API",
         "torch.cuda names that torch_npu provides as torch.npu.* are mapped by the shim; names "
         "without an NPU counterpart raise an error naming the API under the shim.",
         "use the torch.npu function of the same name"),
    Rule("device-capability", "api", PARTIAL, "CUDA compute capability / device properties",
         "NPUs have no CUDA compute capability: torch_npu's get_device_capability() returns None "
         "unless TORCH_NPU_DEVICE_CAPABILITY is set; the shim returns a configurable value. Code "
         "that selects kernels by capability (>= (8, 0) for bf16/flash) picks a path by a made-up "
         "number.",
         "test features instead: torch.npu.is_bf16_supported(), torch.npu.get_device_name()"),
    Rule("cuda-amp", "amp", AUTO, "CUDA automatic mixed precision",
         "torch.cuda.amp.autocast/GradScaler/custom_fwd and torch.autocast(\"cuda\") are mapped by "
         "the shim to the NPU autocast and torch.npu.amp.GradScaler.",
         'use torch.amp.autocast("npu") and torch.amp.GradScaler("npu")'),
    Rule("cuda-graph", "graphs", PARTIAL, "CUDA graphs",
         "CUDAGraph/graph/make_graphed_callables map to torch.npu.NPUGraph, which supports "
         "inference capture only; elsewhere the shim runs eagerly (correct, without the speed-up).",
         "use torch.npu.NPUGraph / torch.npu.graph for inference, or run eagerly"),
    Rule("compile-cuda-graphs", "graphs", PARTIAL, "torch.compile mode that uses CUDA graphs",
         'mode="reduce-overhead"/"max-autotune" rely on CUDA graphs and Triton autotuning. On NPU '
         "inductor needs triton-ascend (or torchair); compilation may fail or fall back to eager.",
         'drop the mode, or compile with torchair\'s NPU backend (torchair.get_npu_backend())'),
    # -- backend switches --------------------------------------------------------------------
    Rule("cudnn-flag", "backend-flags", AUTO, "torch.backends.cudnn setting",
         "cuDNN does not exist on NPU: the shim accepts the flags; benchmark has no effect; "
         "allow_tf32 maps to HF32.",
         "remove it, or use torch.npu.conv.allow_hf32 for allow_tf32"),
    Rule("cudnn-deterministic", "backend-flags", PARTIAL, "cudnn.deterministic",
         "Accepted but does not make NPU kernels deterministic.",
         "use torch.use_deterministic_algorithms(True) (honoured by torch_npu)"),
    Rule("cuda-backend-flag", "backend-flags", AUTO, "torch.backends.cuda setting",
         "matmul.allow_tf32 maps to torch.npu.matmul.allow_hf32 under the shim; SDPA kernel "
         "selection contexts are accepted (the NPU picks its own attention kernel).",
         "use torch.npu.matmul.allow_hf32; drop sdp_kernel selection"),
    # -- distributed -------------------------------------------------------------------------
    Rule("nccl-backend", "distributed", AUTO, "NCCL backend",
         'The shim maps "nccl" to "hccl" in init_process_group/new_group and keeps backend '
         "comparisons working.",
         'use backend="hccl"'),
    Rule("nccl-env", "distributed", PARTIAL, "NCCL_* environment variable",
         "NCCL variables have no effect on HCCL; the shim maps the ones with an HCCL equivalent "
         "(e.g. NCCL_SOCKET_IFNAME -> HCCL_SOCKET_IFNAME) and warns about the rest.",
         "set the HCCL_* equivalent, such as HCCL_SOCKET_IFNAME, HCCL_CONNECT_TIMEOUT or HCCL_BUFFSIZE"),
    Rule("reduce-op-avg", "distributed", PARTIAL, "ReduceOp.AVG",
         "HCCL itself implements only SUM/PROD/MAX/MIN: current torch_npu (and the simulator) runs AVG "
         "as SUM followed by a division, so results can differ in the last bits from NCCL's AVG; "
         "older torch_npu releases reject ReduceOp.AVG.",
         "for portability across torch_npu versions: all_reduce with ReduceOp.SUM, then divide by "
         "dist.get_world_size()"),
    Rule("data-parallel", "distributed", PARTIAL, "nn.DataParallel",
         "DataParallel replicates the module over the visible devices from one process; it runs on "
         "NPU devices, but torch_npu does not support it officially and it is slower than DDP.",
         "use DistributedDataParallel with backend=\"hccl\" (torchrun)"),
    # -- environment -------------------------------------------------------------------------
    Rule("cuda-env", "environment", AUTO, "CUDA environment variable",
         "The shim maps CUDA_VISIBLE_DEVICES to ASCEND_RT_VISIBLE_DEVICES (validated, sorted) and "
         "PYTORCH_CUDA_ALLOC_CONF to PYTORCH_NPU_ALLOC_CONF before the backend starts.",
         "set ASCEND_RT_VISIBLE_DEVICES / PYTORCH_NPU_ALLOC_CONF"),
    Rule("cuda-env-other", "environment", PARTIAL, "CUDA-only environment variable",
         "This variable has no effect on NPU.",
         "see the suggestion for the NPU equivalent"),
    Rule("nvidia-smi", "environment", MANUAL, "nvidia-smi invocation",
         "nvidia-smi does not exist on Ascend hosts; parsing its output fails.",
         "use npu-smi info, or torch.npu.mem_get_info()/device_count() from Python"),
    # -- numerics / layout ---------------------------------------------------------------------
    Rule("float64", "numerics", PARTIAL, "float64 on the device",
         "Ascend NPUs have no float64 compute for most ops. Under the shim's default WARN policy "
         "float64 on the device becomes float32 (results change in the low digits; code that "
         "relies on double precision, e.g. RoPE frequency tables, loses accuracy); with policy "
         "ERROR it raises.",
         "use float32 on the NPU (compute float64 parts on the CPU if precision matters)"),
    Rule("channels-last", "numerics", PARTIAL, "channels_last memory format",
         "Runs, but Ascend kernels use their own internal formats: channels_last gives no speed-up "
         "and costs layout conversions (the shim can keep tensors contiguous, opt-in).",
         "drop memory_format=torch.channels_last on NPU"),
    # -- compile / model ---------------------------------------------------------------------
    Rule("jit-script", "compile", AUTO, "torch.jit.script",
         "Left alone by the shim (transfer_to_npu disables it process-wide): TorchScript runs op by "
         "op on NPU without CUDA fusers; export with torch.jit.save works.",
         "keep; for speed prefer torch.compile with torchair"),
    Rule("torch-load", "serialization", AUTO, "torch.load without map_location",
         "A checkpoint saved from CUDA tensors is restored to CUDA by default, which fails on NPU. "
         "The shim restores such checkpoints onto the NPU.",
         'pass map_location="npu" (or "cpu")'),
    # -- extensions / libraries --------------------------------------------------------------
    Rule("cuda-extension", "extension", MANUAL, "custom CUDA extension",
         "CUDA C++ extensions cannot be built or loaded on Ascend.",
         "port the kernel to an AscendC custom op, or use an existing torch_npu op "
         "(torch_npu.npu_*); build C++ parts with torch_npu.utils.cpp_extension.NpuExtension"),
    Rule("cuda-source", "extension", MANUAL, "CUDA source file",
         "CUDA kernels (.cu/.cuh) do not run on Ascend.",
         "port to AscendC, or replace with torch / torch_npu operators"),
    Rule("cuda-library", "third-party", MANUAL, "CUDA-only library",
         "This library ships CUDA kernels (or drives NVIDIA tools) and does not run on Ascend.",
         "see the suggestion for the Ascend replacement"),
    Rule("triton-kernel", "third-party", MANUAL, "Triton kernel",
         "Triton kernels need triton-ascend on NPU; kernels tuned for NVIDIA (num_warps, "
         "shared-memory sizes, tl.dot shapes) usually need porting.",
         "install triton-ascend and port the kernel, or use a torch / torch_npu equivalent"),
]

RULES: dict[str, Rule] = {r.id: r for r in _RULES}
CATEGORIES = tuple(dict.fromkeys(r.category for r in _RULES))


def get(rule_id: str) -> Rule:
    """The rule with this id (KeyError if unknown)."""
    return RULES[rule_id]
