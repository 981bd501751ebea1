"""Rule ``torch-load``: torch.load without map_location."""
from __future__ import annotations

from ascend_compat.analysis.rules.base import AUTO, Rule

RULE = Rule('torch-load', 'serialization', AUTO, 'torch.load without map_location',
            'A checkpoint saved from CUDA tensors is restored to CUDA by default, which fails on NPU. The'
            ' shim restores such checkpoints onto the NPU.',
            'pass map_location="npu" (or "cpu").', order=25)
TRIGGERS = ("torch.load",)


def on_call(v, node, q, attr) -> None:
    if q == "torch.load" and len(node.args) < 2 and not any(k.arg == "map_location" for k in node.keywords):
        v.report(node, RULE.id, "torch.load without map_location: CUDA-saved tensors load to CUDA "
                 "(the shim maps them to the NPU)", RULE.suggestion)
