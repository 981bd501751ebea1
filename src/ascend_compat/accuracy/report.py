"""The accuracy report: the first departing op (with ``path:line``), every departure, and a table per
module; text and JSON (versioned like the other reports)."""
from __future__ import annotations

import json
from typing import Any, Dict, List

from ascend_compat._files import display_path
from ascend_compat._schemas import VERSIONS, schema_id

SCHEMA = schema_id("compare")
SCHEMA_VERSION = VERSIONS["compare"]
MAX_LISTED = 20


class AccuracyReport:
    """What a :class:`~ascend_compat.accuracy.mirror.Comparison` found."""

    def __init__(self, comparison, backend: str = "") -> None:
        self.comparison = comparison
        self.backend = backend
        self.departures = list(comparison.departures)

    @property
    def first(self):
        return self.departures[0] if self.departures else None

    def modules(self) -> List[Dict[str, Any]]:
        """Per module: ops compared, departures, the worst violation and its op."""
        table: Dict[str, Dict[str, Any]] = {}
        for r in self.comparison.results + [d for d in self.departures if d not in self.comparison.results]:
            row = table.setdefault(r.module or "<outside modules>",
                                   {"module": r.module or "<outside modules>", "compared": 0, "departures": 0,
                                    "worst_violation": 0.0, "worst_op": ""})
            row["compared"] += 1
            row["departures"] += int(r.departs)
            if r.metrics.violation >= row["worst_violation"]:
                row["worst_violation"], row["worst_op"] = r.metrics.violation, r.name
        return sorted(table.values(), key=lambda row: (-row["departures"], -row["worst_violation"]))

    def text(self) -> str:
        c = self.comparison
        where = f" on {self.backend}" if self.backend else ""
        lines = [f"ascend-compat compare{where}: {c.compared} op calls compared against a {c.reference} host "
                 f"reference ({c.seen} NPU op calls seen)"]
        if c.skipped:
            lines.append("  not compared: " + ", ".join(f"{n} ({why})" for why, n in sorted(c.skipped.items())))
        if not self.departures:
            lines.append("no departure: every compared op is within its tolerance")
        else:
            f = self.first
            lines.append(f"{len(self.departures)} departure(s); the first:")
            lines.append(f"{display_path(f.location)}: {f.name} (call {f.call}, {f.dtype}, {f.phase}) in "
                         f"{f.module or '<outside modules>'}: {_what(f)}")
            lines.append(f"    max abs {f.metrics.max_abs:.3g}, max rel {f.metrics.max_rel:.3g}, cosine "
                         f"{f.metrics.cosine:.6f}, {f.metrics.ulp:.3g} ulp; tolerance rtol {f.rtol:g} atol {f.atol:g}")
            for d in self.departures[1:MAX_LISTED]:
                lines.append(f"{display_path(d.location)}: {d.name} (call {d.call}, {d.dtype}, {d.phase}) in "
                             f"{d.module or '<outside modules>'}: {_what(d)}")
            if len(self.departures) > MAX_LISTED:
                lines.append(f"  ... and {len(self.departures) - MAX_LISTED} more (--format json lists them all)")
        rows = self.modules()
        if rows:
            lines.append("per module (compared / departures / worst violation of tolerance, op):")
            width = max(len(r["module"]) for r in rows)
            for r in rows[:30]:
                lines.append(f"  {r['module']:<{width}}  {r['compared']:>6} {r['departures']:>5}  "
                             f"{_num(r['worst_violation'])}x  {r['worst_op']}")
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        c = self.comparison
        return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "backend": self.backend,
                "reference": c.reference, "compared": c.compared, "seen": c.seen, "skipped": dict(c.skipped),
                "first_departure": self.first.to_dict() if self.first else None,
                "departures": [d.to_dict() for d in self.departures], "modules": self.modules()}

    def json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str) + "\n"


def _what(r) -> str:
    if r.metrics.dtype_loss:
        return (f"the host computes {r.metrics.dtype_loss}, the NPU gives {r.dtype} "
                f"({_num(r.metrics.violation)}x its tolerance)")
    if r.metrics.nan_origin:
        return "NaN/Inf appears here (the reference is finite)"
    return f"{_num(r.metrics.violation)}x its tolerance"


def _num(v: float) -> str:
    return f"{v:.3g}" if v == v and v != float("inf") else str(v)


