"""Rule ``cudnn-flag``: torch.backends.cudnn setting."""
from __future__ import annotations

from ascend_compat.analysis.rules import cudnn_deterministic
from ascend_compat.analysis.rules.base import AUTO, Rule

RULE = Rule('cudnn-flag', 'backend-flags', AUTO, 'torch.backends.cudnn setting',
            'cuDNN does not exist on NPU: the shim accepts the flags; benchmark has no effect; allow_tf32'
            ' maps to HF32.',
            'remove it, or use torch.npu.conv.allow_hf32 for allow_tf32.', order=12)
TRIGGERS = ("cudnn",)
CUDNN_NOTES = {
    "benchmark": "no cuDNN autotuner on NPU; accepted by the shim, no effect",
    "allow_tf32": "maps to HF32 for convolutions (torch.npu.conv.allow_hf32) under the shim",
    "enabled": "no cuDNN on NPU; accepted by the shim, no effect",
    "is_available": "False on NPU (no cuDNN); code gated on it takes its non-cuDNN path",
    "version": "None on NPU (no cuDNN)",
}
HF32 = {"torch.backends.cudnn.allow_tf32": "torch.npu.conv.allow_hf32"}


def qualname(q: str, version):
    """``torch.backends.cudnn.*`` (``deterministic`` is its own rule, cudnn-deterministic)."""
    if not q.startswith("torch.backends.cudnn"):
        return None
    flag = q[len("torch.backends.cudnn."):]
    if flag == "deterministic":
        d = cudnn_deterministic.RULE
        return d.id, d.handling, "torch.backends.cudnn.deterministic: " + d.explanation, d.suggestion
    why = CUDNN_NOTES.get(flag, "no cuDNN on NPU; accepted by the shim, no effect")
    return RULE.id, RULE.handling, f"torch.backends.cudnn{'.' + flag if flag else ''}: {why}", RULE.suggestion


def rewrite_qualname(dotted: str, version):
    """TF32 for convolutions -> HF32."""
    return HF32.get(dotted)
