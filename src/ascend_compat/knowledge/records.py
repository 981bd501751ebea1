"""Record types of the knowledge layer and the advice sentence form they share.

Advice texts are imperative clauses without a final full stop and without placeholders
(``<name>``, ``...``): reports print them after "use"/"set" or on their own.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

AUTO, PARTIAL, MANUAL = "auto", "partial", "manual"
VERDICTS = (AUTO, PARTIAL, MANUAL)

_PLACEHOLDER = re.compile(r"<[A-Za-z_]+>|\.\.\.|\bTODO\b|\bXXX\b")


def advice_problems(text: str) -> list[str]:
    """What is wrong with an advice/reason text (empty list = it follows the sentence form)."""
    problems = []
    if not text or text != text.strip():
        problems.append("empty or padded")
    if text.endswith("."):
        problems.append("ends with a full stop")
    if _PLACEHOLDER.search(text):
        problems.append("contains a placeholder")
    if "  " in text:
        problems.append("double space")
    if text.lower().startswith(("use use", "use set", "use see")):
        problems.append("verb doubled by the report prefix")
    return problems


@dataclass(frozen=True)
class EnvVar:
    """A CUDA/NCCL environment variable (``name``; a trailing ``*`` makes it a prefix).

    ``ascend``: the Ascend variable carrying the same setting, or None. ``converter``: the shim's
    value converter (see ``cuda_shim.patches.env``) when the shim translates it (``shim_maps``).
    ``rule``: the check rule id reporting it. ``example``: ``(value, expected Ascend value)`` set in
    the environment of a simulated run, for records the shim translates; None for the others,
    whose example is that the variable is left alone.
    """

    name: str
    rule: str
    verdict: str
    ascend: Optional[str]
    reason: str
    converter: Optional[str] = None
    shim_maps: bool = False
    example: Optional[tuple[str, str]] = None

    @property
    def advice(self) -> str:
        if self.ascend and not self.shim_maps:
            return f"set {self.ascend} instead"
        if self.ascend:
            return f"set {self.ascend} (the shim copies {self.name} there when {self.ascend} is unset)"
        return "remove it; it has no effect on Ascend"


@dataclass(frozen=True)
class Library:
    """A CUDA-only (or CUDA-first) third-party library, keyed by import name or dotted prefix.

    ``dropin``: the ascend-compat drop-in module answering its imports under the shim, if any.
    ``example``: a snippet that uses the library's main entry point; under ``ascend-compat run
    --simulate`` it must print ``npu`` for ``auto``/``partial`` drop-ins and raise ImportError for
    ``manual`` ones (the library cannot be installed or does not run on Ascend).
    """

    name: str
    verdict: str
    what: str
    replacement: str
    dropin: Optional[str] = None
    example: Optional[str] = None
