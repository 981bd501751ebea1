"""Rule ``triton-kernel``: Triton kernel."""
from __future__ import annotations

from ascend_compat.analysis.rules.base import MANUAL, Rule

RULE = Rule('triton-kernel', 'third-party', MANUAL, 'Triton kernel',
            'Triton kernels need triton-ascend on NPU; kernels tuned for NVIDIA (num_warps, shared-memory'
            ' sizes, tl.dot shapes) usually need porting.',
            'install triton-ascend and port the kernel, or use a torch / torch_npu equivalent.', order=29)
TRIGGERS = ("jit",)
NAMES = frozenset({"triton.jit", "triton.autotune", "triton.heuristics"})


def qualname(q: str, version):
    if q in NAMES:
        return RULE.id, RULE.handling, f"@{q} kernel: {RULE.explanation}", RULE.suggestion
    return None
