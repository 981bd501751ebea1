"""Rule ``compile-cuda-graphs``: torch.compile mode that uses CUDA graphs."""
from __future__ import annotations

from ascend_compat.analysis.rules.base import PARTIAL, Rule, const_str

RULE = Rule('compile-cuda-graphs', 'graphs', PARTIAL, 'torch.compile mode that uses CUDA graphs',
            'mode="reduce-overhead"/"max-autotune" rely on CUDA graphs and Triton autotuning. On NPU '
            'inductor needs triton-ascend (or torchair); compilation may fail or fall back to eager.',
            "drop the mode, or compile with torchair's NPU backend (torchair.get_npu_backend()).", order=11)
TRIGGERS = ("cuda",)
TRIGGER_STRINGS = ("reduce-overhead", "max-autotune")  # torch.compile modes, string literals


def qualname(q: str, version):
    if q.startswith("torch._inductor.") and ("cudagraph" in q or "cuda_graph" in q):
        return (RULE.id, RULE.handling, f"{q}: inductor's CUDA-graph setting; NPU graphs need torchair "
                "(or triton-ascend)", RULE.suggestion)
    return None


def on_call(v, node, q, attr) -> None:
    """``torch.compile(mode="reduce-overhead" | "max-autotune")``."""
    if q != "torch.compile":
        return
    for k in node.keywords:
        s = const_str(k.value)
        if k.arg == "mode" and s in ("reduce-overhead", "max-autotune"):
            v.report(k.value, RULE.id, f'torch.compile(mode="{s}"): relies on CUDA graphs / Triton autotuning; '
                     "on NPU it needs triton-ascend or torchair and may fall back to eager", RULE.suggestion)
