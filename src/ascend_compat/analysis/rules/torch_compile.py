"""Rule ``torch-compile``: ``torch.compile`` with its default backend, inductor (knowledge.compile).

``torch.compile(m)``, ``torch.compile(m, backend="inductor")``, ``@torch.compile`` and ``torch.compile``
passed as a value are reported with the record's verdict; a backend that generates no code
(``"eager"``, ``"aot_eager"``) or one the script passes as an object (torchair's) is not reported.
The ``mode`` argument is the ``compile-cuda-graphs`` rule's.
"""
from __future__ import annotations

import re

from ascend_compat.analysis.rules.base import PARTIAL, Rule, const_str
from ascend_compat.knowledge import compile as records

_REC = records.BY_NAME["torch.compile(model)"]
RULE = Rule('torch-compile', 'compile', _REC.verdict, 'torch.compile with the inductor backend',
            f"{_REC.reason[0].upper()}{_REC.reason[1:]}.", _REC.advice, order=12)
TRIGGERS = ()
#: the word compile (a pattern that starts with its literal is found by the regex engine's fast scan; a leading
#: ``\b`` made it 25 times slower over torch's 46 MB)
TRIGGER_PATTERNS = (re.compile(r"compile(?<!\wcompile)\b"),)
_STATE = "torch-compile"


def _report(v, node, what: str) -> None:
    v.report(node, RULE.id, f"{what}: {_REC.reason}", _REC.advice, handling=PARTIAL)


def on_call(v, node, q, attr) -> None:
    """``torch.compile(m)`` / ``torch.compile(m, backend="inductor")``; other backends are left alone."""
    if q != "torch.compile":
        return
    v.state.setdefault(_STATE, set()).add(id(node.func))
    backend = next((k.value for k in node.keywords if k.arg == "backend"), None)  # keyword-only
    if backend is None:
        _report(v, node, "torch.compile with its default backend (inductor)")
    elif const_str(backend) == "inductor":
        _report(v, node, 'torch.compile(backend="inductor")')


def on_attribute(v, node, q) -> None:
    """``@torch.compile`` and ``torch.compile`` as a value (not the function of a call seen above)."""
    if q == "torch.compile" and id(node) not in v.state.get(_STATE, ()):
        _report(v, node, "torch.compile with its default backend (inductor)")
