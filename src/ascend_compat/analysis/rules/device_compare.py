"""Rule ``device-compare``: a device compared with "cuda".

What the comparison does on Ascend depends on what is compared (the knowledge records of
:mod:`ascend_compat.knowledge.devices`): a value torch gives (``x.device.type``, ``str(x.device)``, a
name assigned from one) is ``npu`` there, so the test is False (``partial``); a string the script set
itself (``device = "cuda"``, an option, a parameter) stays ``"cuda"`` under the shim, so the test holds
(``auto``; migrate rewrites both sides to ``"npu"``). A name compared before the assignment that makes
it a torch value is visited is re-rated when that assignment is seen.
"""
from __future__ import annotations

import ast
import re

from ascend_compat.analysis.rules.base import PARTIAL, Rule, const_str
from ascend_compat.knowledge import devices

#: the knowledge records: a torch value tested for equality / for a substring, and a string the script set
_EQ = devices.BY_NAME['x.device.type == "cuda"']
_IN = devices.BY_NAME['"cuda" in str(device)']
_SET = devices.BY_NAME['device == "cuda" on a string the script set']
RULE = Rule('device-compare', 'device', PARTIAL, 'device type compared with "cuda"',
            'An npu tensor\'s device type is npu, so x.device.type == "cuda" and "cuda" in str(device) '
            'are False on Ascend (with or without the shim) and the code takes its non-CUDA branch; a string '
            'the script set itself (device = "cuda") stays "cuda" under the shim, so comparing it holds. '
            'migrate rewrites the compared string to "npu".',
            'compare with "npu" (or test x.device.type != "cpu").', order=3)
TRIGGERS = ("cuda",)
#: a rewritten comparison creates nothing on the NPU: the file needs no import torch_npu for it
REWRITE_NEEDS_TORCH_NPU = False
DEVICE_PREFIX = re.compile(r"cuda(:|\Z)")
_STATE = "device-compare"


def _state(v) -> dict:
    """Per file: ``torch`` = bindings assigned a value torch gives, as ``(scope, name)`` (``(None, attr)``
    for attributes); ``pending`` = binding -> findings rated as strings the script set, re-rated if the
    binding turns out to hold a torch value."""
    return v.state.setdefault(_STATE, {"torch": set(), "pending": {}})


def _binding(v, e):
    """``(scope, name)`` a name or attribute operand refers to: names in the innermost visited scope or
    an enclosing one that binds them (the current scope when none does), attributes per file."""
    if type(e) is ast.Attribute:
        return None, e.attr
    if type(e) is not ast.Name:
        return None
    scope = v.scopes[-1]
    return scope.idx, e.id


def _is_torch_binding(v, key) -> bool:
    scope, name = key
    torch = _state(v)["torch"]
    if scope is None:
        return key in torch
    return any((s, name) in torch for s in (scope, *v.scopes[-1].ancestors))


def _torch_value(v, e) -> bool:
    """Whether ``e`` is a device value torch gives: ``x.device``, ``x.device.type``, ``torch.device(...)``,
    ``str()`` / ``.lower()`` of one, or a name (or attribute) assigned one."""
    t = type(e)
    if t is ast.Attribute and e.attr in ("type", "device"):
        return True
    if t is ast.Call:
        f = e.func
        if type(f) is ast.Attribute and f.attr == "device" and type(f.value) is ast.Name and f.value.id == "torch":
            return True
        if type(f) is ast.Name and f.id in ("str", "repr") and e.args:
            arg = e.args[0]  # str() of a bare name not known as a string: a device object, as a rule
            return _torch_value(v, arg) or type(arg) is ast.Name
        if type(f) is ast.Attribute and f.attr in ("lower", "strip"):
            return _torch_value(v, f.value)
        return False
    key = _binding(v, e)
    return key is not None and _is_torch_binding(v, key)


def _rating(v, operands, use_in: bool):
    """(record, the compared binding to watch or None) for the non-string side of the comparison."""
    for o in operands:
        if const_str(o) is None and type(o) not in (ast.Tuple, ast.List, ast.Set) and _torch_value(v, o):
            return (_IN if use_in else _EQ), None
    keys = [_binding(v, o) for o in operands]
    return _SET, next((k for k in keys if k), None)


def on_compare(v, node, operands) -> None:
    """``x.device.type == "cuda"``, ``dev in ("cuda", "cuda:0")``, ``"cuda" in device``."""
    if any(v.is_device_expr(o) for o in operands):
        use_in = any(type(op) in (ast.In, ast.NotIn) for op in node.ops)
        for o in operands:
            for el in (o.elts if type(o) in (ast.Tuple, ast.List, ast.Set) else [o]):
                s = const_str(el)
                if s is not None and DEVICE_PREFIX.match(s):
                    rec, watch = _rating(v, operands, use_in)
                    before = len(v.findings)
                    v.report(el, RULE.id, f'device compared with "{s}": {rec.reason}',
                             f'compare with "{devices.rewrite_head(s)}".' if rec is not _SET else rec.advice,
                             handling=rec.verdict)
                    if watch is not None and len(v.findings) > before:
                        v.dynamic_names.add(watch[1])  # the scanner then visits the lines that assign it
                        _state(v)["pending"].setdefault(watch[1], []).append(
                            (watch[0], v.findings[-1], s, use_in))


def on_assign(v, node, targets, value, augmented: bool) -> None:
    """Bindings assigned a value torch gives; findings that rated such a binding as a string are re-rated."""
    if augmented or not _torch_value(v, value):
        return
    state = _state(v)
    for t in targets:
        key = _binding(v, t)
        if key is None:
            continue
        state["torch"].add(key)
        scope, name = key
        keep = []
        for use_scope, finding, s, use_in in state["pending"].pop(name, ()):
            if scope is not None and use_scope != scope and scope not in v._ancestors(use_scope):
                keep.append((use_scope, finding, s, use_in))
                continue
            rec = _IN if use_in else _EQ
            finding.handling = rec.verdict
            finding.message = f'device compared with "{s}": {rec.reason}'
            finding.suggestion = f'compare with "{devices.rewrite_head(s)}".'
        if keep:
            state["pending"][name] = keep


def on_call(v, node, q, attr) -> None:
    """``str(dev).startswith("cuda")``."""
    if q is None and attr in ("startswith", "endswith") and node.args and v.is_device_expr(node.func.value):
        s = const_str(node.args[0])
        if s is not None and s.startswith("cuda"):
            v.report(node.args[0], RULE.id, f'device string tested with {attr}("{s}"): {_IN.reason}',
                     f'test for "{devices.rewrite_head(s)}".', handling=_IN.verdict)


def rewrite_string(body: str):
    return devices.rewrite_head(body) if body.startswith("cuda") else None
