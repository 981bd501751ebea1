"""Rule ``channels-last``: channels_last memory format."""
from __future__ import annotations

from ascend_compat.analysis.rules.base import PARTIAL, Rule

RULE = Rule('channels-last', 'numerics', PARTIAL, 'channels_last memory format',
            'Runs, but Ascend kernels use their own internal formats: channels_last gives no speed-up and'
            ' costs layout conversions (the shim can keep tensors contiguous, opt-in).',
            'drop memory_format=torch.channels_last on NPU.', order=23)
TRIGGERS = ("channels_last",)
NAMES = frozenset({"torch.channels_last", "torch.channels_last_3d"})


def qualname(q: str, version):
    if q in NAMES:
        return RULE.id, RULE.handling, f"{q}: runs, but no speed-up on NPU (extra layout conversions)", RULE.suggestion
    return None
