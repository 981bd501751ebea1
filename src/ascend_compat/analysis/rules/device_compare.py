"""Rule ``device-compare``: device type compared with "cuda"."""
from __future__ import annotations

import ast
import re

from ascend_compat.analysis.rules.base import AUTO, Rule, const_str

RULE = Rule('device-compare', 'device', AUTO, 'device type compared with "cuda"',
            'Comparisons such as x.device.type == "cuda" keep working under the shim (it reports npu '
            'devices to CUDA-gated checks); without the shim they are False on NPU and silently take the '
            'CPU branch.',
            'compare with "npu" (or use x.device.type != "cpu")', order=3)
TRIGGERS = ("cuda",)
DEVICE_PREFIX = re.compile(r"cuda(:|\Z)")


def on_compare(v, node, operands) -> None:
    """``x.device.type == "cuda"``, ``dev in ("cuda", "cuda:0")``."""
    if any(v.is_device_expr(o) for o in operands):
        for o in operands:
            for el in (o.elts if type(o) in (ast.Tuple, ast.List, ast.Set) else [o]):
                s = const_str(el)
                if s is not None and DEVICE_PREFIX.match(s):
                    v.report(el, RULE.id, f'device compared with "{s}"', f'compare with "{"npu" + s[4:]}"')


def on_call(v, node, q, attr) -> None:
    """``str(dev).startswith("cuda")``."""
    if q is None and attr in ("startswith", "endswith") and node.args and v.is_device_expr(node.func.value):
        s = const_str(node.args[0])
        if s is not None and s.startswith("cuda"):
            v.report(node.args[0], RULE.id, f'device string tested with {attr}("{s}")', f'test for "{"npu" + s[4:]}"')


def rewrite_string(body: str):
    return "npu" + body[4:] if body.startswith("cuda") else None
