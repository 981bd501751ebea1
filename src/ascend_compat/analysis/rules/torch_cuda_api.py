"""Rule ``torch-cuda-api``: torch.cuda API."""
from __future__ import annotations

from ascend_compat.analysis.rules import cuda_api
from ascend_compat.analysis.rules.base import AUTO, MANUAL, PARTIAL, Rule
from ascend_compat.knowledge import cuda_names

RULE = Rule('torch-cuda-api', 'api', AUTO, 'torch.cuda API',
            'torch.cuda names that torch_npu provides as torch.npu.* are mapped by the shim; names '
            'without an NPU counterpart raise an error naming the API under the shim.',
            'use the torch.npu function of the same name.', order=7)
TRIGGERS = ("cuda",)


def qualname(q: str, version):
    """``torch.cuda.*`` (each name's rule and verdict from torch_npu's API table and the shim's
    table in the knowledge layer), private ``torch._C`` CUDA bindings, ``ProfilerActivity.CUDA``."""
    if q == "torch.cuda" or q.startswith("torch.cuda."):
        return cuda_api.classify_torch_cuda(q, version)
    rec = cuda_names.PRIVATE_NAMES.get(q[len("torch._C."):]) if q.startswith("torch._C.") else None
    if rec is not None:  # a private binding the shim emulates: its knowledge record decides
        return RULE.id, rec.verdict, f"{q}: {rec.reason}", rec.advice
    if q.startswith(("torch._C._cuda", "torch._C._cudart", "torch._C._nccl")):
        return (RULE.id, MANUAL, f"{q}: a private CUDA binding; torch_npu has no counterpart",
                "use the public torch.npu API instead of torch._C CUDA bindings.")
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
