"""Rule ``gloo-backend``: a process group on gloo alone, which takes no NPU tensors.

On CUDA machines gloo also runs collectives on CUDA tensors (torch's ``Backend.backend_capability``
lists gloo for ``cpu`` and ``cuda``); on Ascend it takes CPU tensors only,
so a collective on an npu tensor in a ``"gloo"`` group raises. The verdict, reason and advice are
the knowledge record's (``knowledge.backends``, ``'"gloo"'``): partial, not manual, because a gloo
group used for CPU tensors only (common for bookkeeping) runs unchanged. Only literal backend
strings are reported.
"""
from __future__ import annotations

from ascend_compat.analysis.rules.base import PARTIAL, Rule, const_str
from ascend_compat.knowledge import backends

_REC = backends.BY_NAME['"gloo"']
RULE = Rule(_REC.rule, 'distributed', PARTIAL, 'gloo backend',
            f"{_REC.reason[0].upper()}{_REC.reason[1:]}.", _REC.advice, order=16)
TRIGGERS = ("gloo",)
#: calls whose first positional argument is a backend
BACKEND_CALLS = backends.BACKEND_CALLS


def _is_gloo_only(s: str) -> bool:
    """``"gloo"``, or a device:backend list giving gloo the CUDA device (``"cuda:gloo"``)."""
    low = s.strip().lower()
    return low == "gloo" or any(item.strip() == "cuda:gloo" for item in low.split(","))


def on_call(v, node, q, attr) -> None:
    """``init_process_group("gloo")``, ``new_group(..., backend="gloo")``."""
    name = attr or (q or "").rsplit(".", 1)[-1]
    if name not in BACKEND_CALLS:
        return
    args = [kw.value for kw in node.keywords if kw.arg == "backend"]
    if name == "init_process_group" and node.args:
        args.append(node.args[0])
    for expr in args:
        s = const_str(expr)
        if s is not None and _is_gloo_only(s):
            v.report(expr, RULE.id, f'"{s}" used as a distributed backend: {_REC.reason}', _REC.advice,
                     handling=_REC.verdict)
