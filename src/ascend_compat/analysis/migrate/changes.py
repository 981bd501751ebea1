"""One rewrite made by migrate (a row of its change table); no libcst needed to read it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass
class Change:
    """One rewrite (a line of migrate's change table)."""

    path: str
    line: int
    rule: str
    before: str
    after: str
    cell: Optional[int] = None

    def to_dict(self) -> dict:
        d = {"path": self.path, "line": self.line, "rule": self.rule, "before": self.before, "after": self.after}
        if self.cell is not None:
            d["cell"] = self.cell
        return d
