"""Rule ``is-cuda``: Tensor.is_cuda."""
from __future__ import annotations

import ast

from ascend_compat.analysis.rules.base import AUTO, Rule

RULE = Rule('is-cuda', 'device', AUTO, 'Tensor.is_cuda',
            'The shim makes is_cuda true for NPU tensors; natively it is False on NPU.',
            'use Tensor.is_npu (torch_npu) or x.device.type == "npu".', order=4)
TRIGGERS = ("cuda",)
#: migrate renames the attribute (old, new)
REWRITE_ATTR = ("is_cuda", "is_npu")


def on_attribute(v, node, q) -> None:
    """``x.is_cuda`` (reported at the ``.is_cuda`` attribute, also inside a longer chain)."""
    target = node
    if q is not None and node.attr != "is_cuda" and ".is_cuda." in q + ".":
        while type(target) is ast.Attribute and target.attr != "is_cuda":
            target = target.value
    if type(target) is ast.Attribute and target.attr == "is_cuda":
        v.report(target, RULE.id, ".is_cuda is False for NPU tensors without the shim", RULE.suggestion)
