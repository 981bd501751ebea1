"""Rule ``torch-cuda-api``: torch.cuda API."""
from __future__ import annotations

import ast

from ascend_compat import data
from ascend_compat.analysis.rules import cuda_api
from ascend_compat.analysis.rules.base import AUTO, MANUAL, PARTIAL, Rule, const_str
from ascend_compat.knowledge import cuda_names

RULE = Rule('torch-cuda-api', 'api', AUTO, 'torch.cuda API',
            'torch.cuda names that torch_npu provides as torch.npu.* are mapped by the shim; names '
            'without an NPU counterpart raise an error naming the API under the shim.',
            'use the torch.npu function of the same name.', order=7)
TRIGGERS = ("cuda", "cudnn", "cublas", "nccl", "nvtx", "_jit_")
_PRIVATE_ADVICE = "use the public torch.npu API instead of torch._C CUDA bindings."


def _private(q: str):
    """A private ``torch._C`` name: the table generated from torch's stubs (``data.torch_c_cuda``)."""
    cuda_build, switches = data.torch_c_cuda()
    name = q[len("torch._C."):]
    rec = cuda_names.PRIVATE_NAMES.get(name)
    if rec is not None:  # a private binding the shim emulates: its knowledge record decides
        return RULE.id, rec.verdict, f"{q}: {rec.reason}", rec.advice
    low = name.lower()
    if not any(w in low for w in TRIGGERS):
        return None  # (names without a CUDA word, such as _broadcast_coalesced, are not followed)
    if name in cuda_build or name.split(".", 1)[0] in cuda_build:
        return (RULE.id, MANUAL, f"{q}: a private binding torch registers only in its CUDA builds; torch_npu's "
                "torch has no such attribute", _PRIVATE_ADVICE)
    if name in switches:
        return (RULE.id, PARTIAL, f"{q}: a private switch of a CUDA-only technology (GPU fuser, cuDNN, cuBLAS); "
                "it runs on Ascend and changes nothing there", "remove it, or guard it with a check that the device is CUDA.")
    if name.startswith(("_cuda", "_cudart", "_nccl")):  # newer than the table
        return RULE.id, MANUAL, f"{q}: a private CUDA binding; torch_npu has no counterpart", _PRIVATE_ADVICE
    return None


def on_call(v, node, q, attr) -> None:
    """``hasattr(torch._C, "_jit_set_nvfuser_enabled")`` / ``getattr(...)``: the name given as a string."""
    f = node.func
    if type(f) is ast.Name and f.id in ("hasattr", "getattr") and len(node.args) >= 2 and not v.bound(f.id):
        s = const_str(node.args[1])
        obj = node.args[0]
        if s is not None and type(obj) in (ast.Name, ast.Attribute) and v.qual(obj) == "torch._C":
            c = _private("torch._C." + s)
            if c is not None:
                v.report(node.args[1], c[0], c[2], c[3], c[1])


def qualname(q: str, version):
    """``torch.cuda.*`` (each name's rule and verdict from torch_npu's API table and the shim's
    table in the knowledge layer), private ``torch._C`` CUDA bindings, ``ProfilerActivity.CUDA``."""
    if q == "torch.cuda" or q.startswith("torch.cuda."):
        return cuda_api.classify_torch_cuda(q, version)
    if q.startswith("torch._C."):
        return _private(q)
    if q.startswith("torch.") and q.endswith(".ProfilerActivity.CUDA"):
        return (RULE.id, PARTIAL, "ProfilerActivity.CUDA: records no device activity on NPU",
                "use torch_npu.profiler.profile with torch_npu.profiler.ProfilerActivity.NPU.")
    return None


def rewrite_qualname(dotted: str, version):
    """``torch.cuda.X`` -> ``torch.npu.X`` when torch_npu has X."""
    return cuda_api.npu_chain(dotted, version)


def rewrite_import(module: str):
    """``torch.cuda[.sub]`` -> ``torch_npu.npu[.sub]`` (the names imported are checked one by one)."""
    if module == "torch.cuda" or module.startswith("torch.cuda."):
        return "torch_npu.npu" + module[len("torch.cuda"):]
    return None
