"""Which fully-qualified names are CUDA references, and how they are classified (data + one lookup).

``classify(qualname)`` is used for every attribute chain / imported name the visitor resolves, e.g.
``torch.cuda.amp.autocast``, ``torch.backends.cudnn.benchmark``, ``torch.nn.DataParallel``.
It returns ``(rule, handling, message, suggestion)`` or None.
"""
from __future__ import annotations

import functools
from typing import Optional, Tuple

from ascend_compat.analysis.rules import cuda_api, libraries
from ascend_compat.analysis.rules.catalog import MANUAL, PARTIAL, RULES
from ascend_compat.knowledge import backends as knowledge_backends, extensions as knowledge_extensions

Classified = Tuple[str, str, str, str]

DATA_PARALLEL = {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                 "torch.nn.parallel.data_parallel", "torch.nn.parallel.data_parallel.DataParallel",
                 "torch.nn.parallel.data_parallel.data_parallel"}
FLOAT64 = {"torch.float64": "torch.float32", "torch.double": "torch.float32",
           "torch.complex128": "torch.complex64", "torch.cdouble": "torch.complex64"}
CHANNELS_LAST = {"torch.channels_last", "torch.channels_last_3d"}
JIT_SCRIPT = {"torch.jit.script", "torch.jit.script_method"}
EXTENSION = {"torch.utils.cpp_extension.CUDA_HOME": "ASCEND_HOME_PATH (CANN toolkit)",
             "torch.utils.cpp_extension.include_paths_cuda": None}
TRITON = {"triton.jit", "triton.autotune", "triton.heuristics"}
_USE_SITES_ELSEWHERE = {"triton"}

CUDNN_NOTES = {
    "benchmark": "no cuDNN autotuner on NPU; accepted by the shim, no effect",
    "allow_tf32": "maps to HF32 for convolutions (torch.npu.conv.allow_hf32) under the shim",
    "enabled": "no cuDNN on NPU; accepted by the shim, no effect",
    "is_available": "False on NPU (no cuDNN); code gated on it takes its non-cuDNN path",
    "version": "None on NPU (no cuDNN)",
}
CUDA_BACKEND_NOTES = {
    "matmul.allow_tf32": "maps to HF32 matmuls (torch.npu.matmul.allow_hf32) under the shim",
    "matmul.allow_fp16_reduced_precision_reduction": "accepted; NPU matmul precision is set by its own switches",
    "sdp_kernel": "SDPA kernel selection is accepted; the NPU picks its own fused attention kernel",
    "enable_": "SDPA kernel switches are accepted; the NPU picks its own fused attention kernel",
    "is_built": "False on NPU builds",
}

#: qualname prefixes worth binding as aliases (anything else is not followed)
INTERESTING_ROOTS = ("torch", "triton", "numba", "deepspeed", "flash_attn", "os", "subprocess")


@functools.lru_cache(maxsize=4096)
def classify(q: str, torch_npu_version: Optional[str] = None) -> Optional[Classified]:
    if q == "torch.cuda" or q.startswith("torch.cuda."):
        name = q[len("torch.cuda."):] if q != "torch.cuda" else ""
        if not name:
            return ("torch-cuda-api", "auto", "torch.cuda module used as a value",
                    "use torch.npu (torch_npu) or torch.get_device_module()")
        st = cuda_api.status(name, torch_npu_version)
        # a note phrased as advice ("prefer X", "use X") is the suggestion, not part of the message
        advice = st.note.startswith(("prefer ", "use "))
        msg = f"torch.cuda.{name}"
        if st.note and not advice:
            msg += f": {st.note}"
        elif st.npu_name is None:
            msg += ": torch_npu has no counterpart"
        if advice:
            sugg = "use " + st.note.split(" ", 1)[1]
        elif st.rule == "device-capability":
            sugg = RULES[st.rule].suggestion
        elif st.npu_name:
            sugg = f"use {st.npu_name}"
        else:
            sugg = "remove it, or guard it with a check that the device is CUDA"
        return st.rule, st.handling, msg, sugg
    if q.startswith(("torch._C._cuda", "torch._C._cudart", "torch._C._nccl")):
        return ("torch-cuda-api", MANUAL, f"{q}: a private CUDA binding; torch_npu has no counterpart",
                "use the public torch.npu API instead of torch._C CUDA bindings")
    if q.startswith("torch.") and q.endswith(".ProfilerActivity.CUDA"):
        return ("torch-cuda-api", PARTIAL, "ProfilerActivity.CUDA: records no device activity on NPU",
                "use torch_npu.profiler.profile with torch_npu.profiler.ProfilerActivity.NPU")
    if q.startswith("torch._inductor.") and ("cudagraph" in q or "cuda_graph" in q):
        r = RULES["compile-cuda-graphs"]
        return r.id, r.handling, f"{q}: inductor's CUDA-graph setting; NPU graphs need torchair (or triton-ascend)", r.suggestion
    if q.startswith("torch.") and "_init_for_cuda_graphs" in q:
        r = RULES["cuda-graph"]
        return r.id, r.handling, f"{q}: CUDA-graph RNG setup; " + r.explanation, r.suggestion
    if q.startswith("torch.backends.cudnn"):
        flag = q[len("torch.backends.cudnn."):]
        if flag == "deterministic":
            r = RULES["cudnn-deterministic"]
            return r.id, r.handling, "torch.backends.cudnn.deterministic: " + r.explanation, r.suggestion
        r = RULES["cudnn-flag"]
        why = CUDNN_NOTES.get(flag, "no cuDNN on NPU; accepted by the shim, no effect")
        return r.id, r.handling, f"torch.backends.cudnn{'.' + flag if flag else ''}: {why}", r.suggestion
    if q.startswith("torch.backends.cuda.") or q == "torch.backends.cuda":
        r = RULES["cuda-backend-flag"]
        rest = q[len("torch.backends.cuda."):]
        why = next((v for k, v in CUDA_BACKEND_NOTES.items() if rest.startswith(k)),
                   "CUDA backend switch; accepted by the shim, no effect on NPU")
        return r.id, r.handling, f"{q}: {why}", r.suggestion
    if q in DATA_PARALLEL:
        r = RULES["data-parallel"]
        return r.id, r.handling, r.explanation, r.suggestion
    if q in FLOAT64:
        r = RULES["float64"]
        return (r.id, r.handling, f"{q}: no float64 compute on NPU; on the device it becomes float32 under the "
                "shim (numerics change) or fails", f"use {FLOAT64[q]} on the NPU (keep float64 math on the CPU)")
    if q in CHANNELS_LAST:
        r = RULES["channels-last"]
        return r.id, r.handling, f"{q}: runs, but no speed-up on NPU (extra layout conversions)", r.suggestion
    if q in JIT_SCRIPT:
        r = RULES["jit-script"]
        return r.id, r.handling, f"{q}: runs op by op on NPU (no CUDA fuser); left enabled by the shim", r.suggestion
    if q.startswith("torch.distributed") and q.endswith("ReduceOp.AVG"):
        r = RULES["reduce-op-avg"]
        return r.id, r.handling, "ReduceOp.AVG: " + r.explanation, r.suggestion
    if q in knowledge_backends.BY_QUALNAME:
        rec = knowledge_backends.BY_QUALNAME[q]
        return rec.rule, rec.verdict, f"{q}: NCCL is not available on NPU (HCCL is); {rec.reason}", rec.advice
    if q in knowledge_extensions.BY_QUALNAME and q.endswith("CUDAExtension"):  # load/load_inline: by their arguments
        rec = knowledge_extensions.BY_QUALNAME[q]
        return rec.rule, rec.verdict, f"{rec.name}: {rec.reason}", rec.advice
    if q in EXTENSION:
        r = RULES["cuda-extension"]
        repl = EXTENSION[q]
        return (r.id, r.handling, f"{q.rsplit('.', 1)[-1]}: {r.explanation}",
                f"use {repl}; " + r.suggestion if repl and repl not in r.suggestion else r.suggestion)
    if q in TRITON:
        r = RULES["triton-kernel"]
        return r.id, r.handling, f"@{q} kernel: {r.explanation}", r.suggestion
    if "." in q:
        hit = libraries.lookup(q)
        # a use site of a listed library (apex.amp.initialize), except Triton's language, whose
        # kernels the triton-kernel rule reports once per decorator
        if hit is not None and hit[0].split(".", 1)[0] not in _USE_SITES_ELSEWHERE:
            key, lib = hit
            return "cuda-library", lib.verdict, libraries.message(q, lib), lib.replacement
    return None


def is_interesting(q: str) -> bool:
    """Whether an alias bound to ``q`` must be followed (its uses may be CUDA references)."""
    root = q.split(".", 1)[0]
    return root in INTERESTING_ROOTS or root in libraries.TOP_LEVEL_NAMES
