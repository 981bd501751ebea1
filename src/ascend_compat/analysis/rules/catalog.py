"""The rule catalogue: every rule ``check`` can report (from the registry), in listing order.

Each rule has a stable id (used in reports, SARIF and ``# ascend-compat: ignore[ID]``), a category,
a default handling and texts; see :class:`~ascend_compat.analysis.rules.base.Rule`. A finding may
override the default handling (one ``torch.cuda`` name that torch_npu lacks is ``manual`` while the
rule ``torch-cuda-api`` is ``auto``).
"""
from __future__ import annotations

from ascend_compat.analysis.rules.base import AUTO, HANDLINGS, MANUAL, PARTIAL, Rule
from ascend_compat.analysis.rules.registry import default

__all__ = ["AUTO", "CATEGORIES", "HANDLINGS", "MANUAL", "PARTIAL", "RULES", "Rule", "get"]

RULES: dict[str, Rule] = dict(default().rules)
CATEGORIES = tuple(dict.fromkeys(r.category for r in RULES.values()))


def get(rule_id: str) -> Rule:
    """The rule with this id (KeyError if unknown)."""
    return RULES[rule_id]
