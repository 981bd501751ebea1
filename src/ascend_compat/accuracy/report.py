"""The accuracy report: departures (the first with ``path:line``), what differs *as on Ascend* (by design,
with its line and the switch that controls it), every op call not compared (by op, count and reason),
a table per module and, with a reference run, the whole-run drift; text and JSON (versioned)."""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from ascend_compat._files import display_path as _short
from ascend_compat._schemas import VERSIONS, schema_id
from ascend_compat.accuracy.results import OpResult

SCHEMA = schema_id("compare")
SCHEMA_VERSION = VERSIONS["compare"]
MAX_LISTED = 20


class AccuracyReport:
    """What a :class:`~ascend_compat.accuracy.mirror.Comparison` found (and a :class:`~.drift.DriftReport`
    when the run was compared with a reference run). ``strict`` counts the as-on-Ascend results as
    departures."""

    def __init__(self, comparison, backend: str = "", strict: bool = False, drift=None, stopped: str = "") -> None:
        self.comparison = comparison
        self.stopped = stopped
        self.backend = backend
        self.strict = strict
        self.drift = drift
        self.departures: List[OpResult] = list(comparison.departures)
        self.as_on_ascend: List[OpResult] = list(comparison.as_on_ascend)

    @property
    def first(self) -> Optional[OpResult]:
        return self.departures[0] if self.departures else None

    @property
    def failing(self) -> List[OpResult]:
        """What fails the gate: the departures, and with ``strict`` the as-on-Ascend results too."""
        if not self.strict:
            return self.departures
        return sorted(self.departures + self.as_on_ascend, key=lambda r: r.index)

    @property
    def nothing_compared(self) -> bool:
        return self.comparison.compared == 0

    @property
    def passed(self) -> bool:
        """No departure (nor, with ``strict``, anything as on Ascend), no drift, and something compared."""
        return not self.failing and not self.nothing_compared and not (self.drift is not None and self.drift.drifts)

    def by_design(self) -> List[Dict[str, Any]]:
        """The as-on-Ascend results grouped by behaviour, line and op: ``{"by_design", "title", "control",
        "cuda", "op", "site", "library", "calls", "within_standard", "module"}``."""
        from ascend_compat.knowledge.numerics import BY_DESIGN

        groups: Dict[tuple, Dict[str, Any]] = {}
        for r in self.as_on_ascend:
            key = (r.by_design, r.site[:2] if r.site else None, r.name, r.library[:2] if r.library else None)
            row = groups.get(key)
            if row is None:
                fact = BY_DESIGN[r.by_design]
                row = groups[key] = {"by_design": r.by_design, "title": fact.title, "control": fact.control,
                                     "cuda": fact.cuda, "op": r.name, "module": r.module or "<outside modules>",
                                     "site": _frame(r.site), "library": _frame(r.library), "note": r.note or None,
                                     "calls": 0, "beyond_exact": 0}
            row["calls"] += 1
            row["beyond_exact"] += int(r.verdict.departs)
        return list(groups.values())

    def modules(self) -> List[Dict[str, Any]]:
        """Per module: ops compared, departures, as on Ascend, the worst excess over the standard and its op."""
        table: Dict[str, Dict[str, Any]] = {}
        c = self.comparison
        for r in c.results + self.departures + self.as_on_ascend:
            name = r.module or "<outside modules>"
            row = table.setdefault(name, {"module": name, "compared": 0, "departures": 0, "as_on_ascend": 0,
                                          "worst_excess": 0.0, "worst_op": ""})
            row["compared"] += 1
            row["departures"] += int(r.departs)
            row["as_on_ascend"] += int(r.kind == "as_on_ascend")
            if r.verdict.excess >= row["worst_excess"]:
                row["worst_excess"], row["worst_op"] = r.verdict.excess, r.name
        return sorted(table.values(), key=lambda row: (-row["departures"], -row["worst_excess"]))

    # ------------------------------------------------------------------ text
    def text(self) -> str:
        c = self.comparison
        where = f" on {self.backend}" if self.backend else ""
        lines = [f"(the script was {self.stopped})"] if self.stopped else []
        lines += [f"ascend-compat compare{where}: {c.compared} op calls compared ({c.seen} NPU op calls seen, "
                 f"{c.ledger.total} not compared), each judged by msprobe's accuracy standard against a CUDA "
                 "stand-in and a float64 golden"]
        if self.nothing_compared:
            lines.append("nothing was compared, which is not a pass: " + self._why_nothing())
        elif not self.departures:
            lines.append("no departure: no compared op is worse than CUDA's result would be")
        else:
            f = self.first
            lines.append(f"{len(self.departures)} departure(s); the first:")
            lines.append(self._line(f))
            lines.append(f"    {f.verdict.standard}: {f.verdict.criterion}")
            for d in self.departures[1:MAX_LISTED]:
                lines.append(self._line(d))
            if len(self.departures) > MAX_LISTED:
                lines.append(f"  ... and {len(self.departures) - MAX_LISTED} more (--format json lists them all)")
        lines += self._by_design_text()
        lines += self._ledger_text()
        rows = self.modules()
        if rows:
            lines.append("per module (compared / departures / as on Ascend / worst excess over the standard, op):")
            width = max(len(r["module"]) for r in rows[:30])
            for r in rows[:30]:
                lines.append(f"  {r['module']:<{width}}  {r['compared']:>6} {r['departures']:>5} {r['as_on_ascend']:>5}  "
                             f"{_num(r['worst_excess'])}x  {r['worst_op']}")
            if len(rows) > 30:
                lines.append(f"  ... {len(rows) - 30} more modules (--format json lists them all)")
        if self.drift is not None:
            lines.append(self.drift.text())
        return "\n".join(lines)

    def _why_nothing(self) -> str:
        c = self.comparison
        if c.seen == 0:
            return "the script ran no op on the NPU (does it move its model and data to the device?)"
        if c.ops is not None:
            return f"none of {', '.join(sorted(c.ops))} ran on the NPU"
        return "every NPU op call seen was left out (see below)"

    def _line(self, r: OpResult) -> str:
        return (f"{_short(r.location)}: {r.name} (call {r.call}, {r.dtype}, {r.phase}) in "
                f"{r.module or '<outside modules>'}: " + _what(r))

    def _by_design_text(self) -> List[str]:
        rows = self.by_design()
        if not rows:
            return []
        counted = "counted as departures (--strict)" if self.strict else "not departures; --strict counts them"
        out = [f"as on Ascend ({sum(r['calls'] for r in rows)} op calls differ from CUDA by design; {counted}):"]
        for r in rows[:MAX_LISTED]:
            site = _short(f"{r['site']['file']}:{r['site']['line']}") if r["site"] else "<no user frame>"
            lib = (f" (inside {_short(r['library']['file'])}:{r['library']['line']})" if r["library"] else "")
            beyond = (f"; {r['beyond_exact']} beyond the standard of the exact computation" if r["beyond_exact"] else
                      "; within the standard")
            out.append(f"{site}: {r['op']} x{r['calls']} in {r['module']}{lib}: {r['title']}{beyond}")
            out.append(f"    CUDA: {r['cuda']}; switch: {r['control']}" + (f"; {r['note']}" if r["note"] else ""))
        if len(rows) > MAX_LISTED:
            out.append(f"  ... and {len(rows) - MAX_LISTED} more lines (--format json lists them all)")
        return out

    def _ledger_text(self) -> List[str]:
        ledger = self.comparison.ledger
        rows = ledger.rows()
        if not rows:
            return ["not compared: nothing (every NPU op call seen was compared)"]
        out = [f"not compared: {ledger.total} op calls of {len({r['op'] for r in rows})} ops:"]
        width = max(len(r["op"]) for r in rows[:30])
        for r in rows[:30]:
            out.append(f"  {r['op']:<{width}}  {r['calls']:>6}  {r['reason']}")
        if len(rows) > 30:
            out.append(f"  ... {len(rows) - 30} more (--format json lists them all)")
        return out

    # ------------------------------------------------------------------ json
    def to_dict(self) -> Dict[str, Any]:
        c = self.comparison
        return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "backend": self.backend, "strict": self.strict,
                "stopped": self.stopped or None,
                "passed": self.passed, "compared": c.compared, "seen": c.seen,
                "not_compared": {"calls": c.ledger.total, "ops": c.ledger.rows()},
                "first_departure": self.first.to_dict() if self.first else None,
                "departures": [d.to_dict() for d in self.departures],
                "as_on_ascend": self.by_design(),
                "modules": self.modules(),
                "drift": self.drift.to_dict() if self.drift is not None else None}

    def json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str) + "\n"


def _frame(f) -> Optional[Dict[str, Any]]:
    return None if f is None else {"file": f[0], "line": f[1], "function": f[2] if len(f) > 2 else ""}


def _what(r: OpResult) -> str:
    v = r.verdict
    if v.nan_origin:
        return "NaN/Inf appears here (the host's result is finite)"
    text = f"{v.criterion}" if v.criterion else f"{_num(v.excess)}x the standard"
    if r.by_design == "float64" or r.note:
        text += f" ({r.note})" if r.note else ""
    if r.library:
        text += f" (inside {_short(r.library[0])}:{r.library[1]})"
    return text


def _num(v: float) -> str:
    return f"{v:.3g}" if v == v and v != float("inf") else str(v)
