"""Rule ``cuda-method``: Tensor/Module .cuda() call."""
from __future__ import annotations

from ascend_compat.analysis.rules.base import AUTO, Rule

RULE = Rule('cuda-method', 'device', AUTO, 'Tensor/Module .cuda() call',
            'The shim maps .cuda() to the current NPU. migrate rewrites it to .npu().',
            'use .npu() (torch_npu) or .to(device) with a device chosen once.', order=1)
TRIGGERS = ("cuda",)
#: migrate renames the method (old, new)
REWRITE_METHOD = ("cuda", "npu")


class _Position:
    __slots__ = ("lineno", "col_offset", "end_lineno", "end_col_offset")

    def __init__(self, lineno, col_offset, end_lineno, end_col_offset):
        self.lineno, self.col_offset, self.end_lineno, self.end_col_offset = lineno, col_offset, end_lineno, end_col_offset


def on_call(v, node, q, attr) -> None:
    """``x.cuda(...)`` on anything but the torch.cuda module or another classified name."""
    if attr == "cuda" and q != "torch.cuda" and not (q and v.classify(q)):
        f = node.func  # reported at the method's name: in a call chain over several lines, that is where it is
        at = _Position(f.end_lineno or node.lineno, (f.end_col_offset or 4) - 4, node.end_lineno, node.end_col_offset)
        v.report(at, RULE.id, ".cuda() moves to the CUDA device",
                 "use .npu()." if not node.args and not node.keywords else "use .npu() with the same arguments.")
