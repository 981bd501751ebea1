"""What a comparison keeps per op call: :class:`OpResult` (a compared call: passed, as on Ascend, or a
departure) and :class:`Ledger` (the calls not compared, by op and reason)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ascend_compat.accuracy.standard import Verdict

__all__ = ["OpResult", "Ledger", "PASSED", "AS_ON_ASCEND", "DEPARTURE"]

PASSED, AS_ON_ASCEND, DEPARTURE = "passed", "as_on_ascend", "departure"


@dataclass
class OpResult:
    """One compared op call. ``call`` counts calls of this op (1-based), ``index`` all compared calls;
    ``kind`` is :data:`PASSED`, :data:`AS_ON_ASCEND` (a by-design difference, ``by_design`` naming it:
    a key of ``knowledge.numerics.BY_DESIGN``) or :data:`DEPARTURE`; ``verdict`` the worst output's;
    ``library`` the library frame that made the call when it was not the user's code (GradScaler's
    cast); ``note`` what else the report should say (where a float64 segment started)."""

    index: int
    name: str
    call: int
    dtype: str
    module: str
    site: Optional[Tuple[str, int, str]]
    phase: str
    verdict: Verdict
    kind: str = PASSED
    by_design: str = ""
    library: Optional[Tuple[str, int, str]] = None
    note: str = ""

    @property
    def departs(self) -> bool:
        return self.kind == DEPARTURE

    @property
    def location(self) -> str:
        return f"{self.site[0]}:{self.site[1]}" if self.site else "<no user frame>"

    def to_dict(self) -> Dict[str, Any]:
        def frame(f):
            return None if f is None else {"file": f[0], "line": f[1], "function": f[2]}

        return {"index": self.index, "op": self.name, "call": self.call, "dtype": self.dtype, "module": self.module,
                "phase": self.phase, "site": frame(self.site), "kind": self.kind, "by_design": self.by_design or None,
                "library": frame(self.library), "note": self.note or None, **self.verdict.to_dict()}


class Ledger:
    """The op calls seen but not compared: ``(op, reason) -> calls``."""

    def __init__(self) -> None:
        self.counts: Dict[Tuple[str, str], int] = {}

    def note(self, op: str, reason: str, calls: int = 1) -> None:
        key = (op, reason)
        self.counts[key] = self.counts.get(key, 0) + calls

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def rows(self) -> List[Dict[str, Any]]:
        """``[{"op", "reason", "calls"}]``, most calls first."""
        return [{"op": op, "reason": why, "calls": n}
                for (op, why), n in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))]

    def reasons(self) -> Dict[str, int]:
        """Calls per reason."""
        out: Dict[str, int] = {}
        for (_, why), n in self.counts.items():
            out[why] = out.get(why, 0) + n
        return out

