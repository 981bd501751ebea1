"""Rule ``device-compare``: device type compared with "cuda"."""
from __future__ import annotations

import ast
import re

from ascend_compat.analysis.rules.base import PARTIAL, Rule, const_str
from ascend_compat.knowledge import devices

#: the knowledge records of the two forms: an equality test and a substring test
_EQ = devices.BY_NAME['x.device.type == "cuda"']
_IN = devices.BY_NAME['"cuda" in str(device)']
RULE = Rule('device-compare', 'device', PARTIAL, 'device type compared with "cuda"',
            'An npu tensor\'s device type is npu, so x.device.type == "cuda" and "cuda" in str(device) '
            'are False on Ascend (with or without the shim) and the code takes its non-CUDA branch. '
            'migrate rewrites the compared string to "npu".',
            'compare with "npu" (or test x.device.type != "cpu").', order=3)
TRIGGERS = ("cuda",)
#: a rewritten comparison creates nothing on the NPU: the file needs no import torch_npu for it
REWRITE_NEEDS_TORCH_NPU = False
DEVICE_PREFIX = re.compile(r"cuda(:|\Z)")


def on_compare(v, node, operands) -> None:
    """``x.device.type == "cuda"``, ``dev in ("cuda", "cuda:0")``."""
    if any(v.is_device_expr(o) for o in operands):
        for o in operands:
            for el in (o.elts if type(o) in (ast.Tuple, ast.List, ast.Set) else [o]):
                s = const_str(el)
                if s is not None and DEVICE_PREFIX.match(s):
                    rec = _IN if any(type(op) in (ast.In, ast.NotIn) for op in node.ops) else _EQ
                    v.report(el, RULE.id, f'device compared with "{s}": {rec.reason}',
                             f'compare with "{devices.rewrite_head(s)}".', handling=rec.verdict)


def on_call(v, node, q, attr) -> None:
    """``str(dev).startswith("cuda")``."""
    if q is None and attr in ("startswith", "endswith") and node.args and v.is_device_expr(node.func.value):
        s = const_str(node.args[0])
        if s is not None and s.startswith("cuda"):
            v.report(node.args[0], RULE.id, f'device string tested with {attr}("{s}"): {_IN.reason}',
                     f'test for "{devices.rewrite_head(s)}".', handling=_IN.verdict)


def rewrite_string(body: str):
    return devices.rewrite_head(body) if body.startswith("cuda") else None
