"""Rule ``cuda-method``: Tensor/Module .cuda() call."""
from __future__ import annotations

from ascend_compat.analysis.rules.base import AUTO, Rule

RULE = Rule('cuda-method', 'device', AUTO, 'Tensor/Module .cuda() call',
            'The shim maps .cuda() to the current NPU. migrate rewrites it to .npu().',
            'use .npu() (torch_npu) or .to(device) with a device chosen once.', order=1)
TRIGGERS = ("cuda",)
#: migrate renames the method (old, new)
REWRITE_METHOD = ("cuda", "npu")


def on_call(v, node, q, attr) -> None:
    """``x.cuda(...)`` on anything but the torch.cuda module or another classified name."""
    if attr == "cuda" and q != "torch.cuda" and not (q and v.classify(q)):
        v.report(node, RULE.id, ".cuda() moves to the CUDA device",
                 "use .npu()." if not node.args and not node.keywords else "use .npu() with the same arguments.")
