"""Rule ``jit-script``: torch.jit.script."""
from __future__ import annotations

from ascend_compat.analysis.rules.base import AUTO, Rule

RULE = Rule('jit-script', 'compile', AUTO, 'torch.jit.script',
            'Left alone by the shim (transfer_to_npu disables it process-wide): TorchScript runs op by op'
            ' on NPU without CUDA fusers; export with torch.jit.save works.',
            'keep it, or use torch.compile with torchair for speed.', order=24)
TRIGGERS = ("jit.script",)  # (an alias of torch.jit is followed from its import line)
NAMES = frozenset({"torch.jit.script", "torch.jit.script_method"})


def qualname(q: str, version):
    if q in NAMES:
        return RULE.id, RULE.handling, f"{q}: runs op by op on NPU (no CUDA fuser); left enabled by the shim", RULE.suggestion
    return None
