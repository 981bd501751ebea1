"""Findings and how they are printed: text (each finding starts with ``path:line``), JSON
(versioned like check's reports) and a Chrome trace (chrome://tracing, Perfetto) of the recorded
steps with every finding marked at its first occurrence."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ascend_compat._files import display_path
from ascend_compat._schemas import VERSIONS, schema_id
from ascend_compat.perf.events import Site, StepRecord

SCHEMA = schema_id("profile")
SCHEMA_VERSION = VERSIONS["profile"]
SEVERITIES = ("high", "medium", "low")
_PHASE_NAMES = {"train": "training steps", "eval": "evaluation", "checkpoint": "checkpointing",
                "setup": "set-up"}


@dataclass
class Finding:
    """One reason the step will be slow on Ascend.

    ``rule`` is a stable id (``device-sync``...); ``weight`` estimates its share of the step
    (``calls_per_step``, ``bytes_per_step``, ``flop_share``, ``op_share`` as they apply); ``fix``
    names the torch / torch_npu API to use instead; ``phase`` is the part of the script it comes from
    (``train``, ``eval``, ``checkpoint``, ``setup``).
    """

    rule: str
    severity: str
    title: str
    fix: str
    site: Optional[Site] = None
    module: str = ""
    weight: Dict[str, float] = field(default_factory=dict)
    first_ns: int = 0
    phase: str = "train"

    @property
    def location(self) -> str:
        if self.site is None:
            return "<no user frame>"
        return f"{display_path(self.site[0])}:{self.site[1]}"

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["site"] = None if self.site is None else {"file": self.site[0], "line": self.site[1],
                                                     "function": self.site[2]}
        d.pop("first_ns")
        return d


@dataclass
class Report:
    """The findings of a record, most severe and heaviest first."""

    findings: List[Finding]
    record: StepRecord
    backend: str = ""
    phases: Tuple[str, ...] = ("train",)

    @property
    def ops_per_step(self) -> float:
        """NPU op calls per recorded step, in the judged phases."""
        counts = self.record.phase_counts()
        return sum(counts.get(p, 0) for p in self.phases) / self.record.n_steps

    def left_out(self) -> Dict[str, int]:
        """NPU op calls of the phases not judged, per phase."""
        return {p: n for p, n in self.record.phase_counts().items() if p not in self.phases and n}

    def notes(self) -> List[str]:
        """What the reader must know to read the findings: nothing ran, phases left out."""
        notes = list(self.record.notes)
        if self.record.stopped:
            notes.insert(0, self.record.stopped + "; what it ran until then is reported")
        counts = self.record.phase_counts()
        if not counts:
            notes.append("no NPU op ran before the script was stopped" if self.record.stopped else
                         "no NPU op ran in the recorded steps: there is nothing to judge (does the script move "
                         "its model and data to the device?)")
            return notes
        left = self.left_out()
        if not any(counts.get(p) for p in self.phases):
            judged = " and ".join(_PHASE_NAMES[p] for p in self.phases)
            notes.append(f"no NPU op ran in {judged}; pass --phases all to judge the rest")
        if left:
            notes.append("left out (not training steps): " + ", ".join(
                f"{n} op call{'s' if n != 1 else ''} in {_PHASE_NAMES[p]}" for p, n in sorted(left.items()))
                + "; --phases all judges them too")
        if self.record.dropped:
            notes.append(f"{self.record.dropped} op calls beyond the event cap were not recorded")
        return notes

    def worst(self) -> Optional[str]:
        for severity in SEVERITIES:
            if any(f.severity == severity for f in self.findings):
                return severity
        return None

    def header(self) -> str:
        n = len(self.record.steps)
        where = f" on {self.backend}" if self.backend else ""
        what = "NPU ops per step" if self.phases == ("train",) else f"NPU ops per step ({', '.join(self.phases)})"
        head = (f"ascend-compat profile: {n} step{'s' if n != 1 else ''} recorded{where}, "
                f"{self.ops_per_step:.0f} {what}")
        return head

    def text(self) -> str:
        lines = [self.header()]
        lines.extend(f"  note: {note}" for note in self.notes())
        if not self.record.phase_counts():
            lines.append("no NPU op ran: no findings")
            return "\n".join(lines)
        if not self.findings:
            lines.append("no findings: nothing in the recorded steps is known to be slow on Ascend")
            return "\n".join(lines)
        counts = {s: sum(f.severity == s for f in self.findings) for s in SEVERITIES}
        lines.append(f"{len(self.findings)} finding(s): "
                     + ", ".join(f"{counts[s]} {s}" for s in SEVERITIES if counts[s]))
        for f in self.findings:
            where = f" [in {f.module}]" if f.module else ""
            lines.append(f"{f.location}: {f.severity.upper()} {f.rule} ({_PHASE_NAMES[f.phase]}): {f.title}{where}")
            if f.weight:
                lines.append("    weight: " + ", ".join(f"{k}={_fmt(v)}" for k, v in f.weight.items()))
            lines.append(f"    fix: {f.fix}")
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "backend": self.backend,
                "source": self.record.source, "steps": list(self.record.steps),
                "ops_per_step": round(self.ops_per_step, 1), "dropped_events": self.record.dropped,
                "phases": list(self.phases), "ops_by_phase": self.record.phase_counts(),
                "stopped": self.record.stopped or None,
                "no_npu_op": not self.record.phase_counts(),
                "notes": self.notes(), "findings": [f.to_dict() for f in self.findings]}

    def json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def chrome_trace(self) -> str:
        """The recorded steps as Chrome-trace JSON: one track of ops, one of steps, findings as
        instant events at their first occurrence."""
        events: List[Dict[str, Any]] = []
        t0 = min([e.start_ns for e in self.record.events if e.start_ns] +
                 [s for s, _ in self.record.step_ns.values()] or [0])
        us = lambda ns: (ns - t0) / 1000.0  # noqa: E731
        events.append({"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "NPU ops (recorded)"}})
        events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": 0, "args": {"name": "ops"}})
        events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "steps"}})
        for step, (start, end) in sorted(self.record.step_ns.items()):
            events.append({"ph": "X", "name": f"step {step}", "pid": 0, "tid": 1, "ts": us(start),
                           "dur": max((end - start) / 1000.0, 0.001)})
        for e in self.record.events:
            args: Dict[str, Any] = {"step": e.step, "kind": e.kind, "shapes": [list(s) for s in e.shapes],
                                    "dtypes": list(e.dtypes)}
            if e.site:
                args["source"] = f"{e.site[0]}:{e.site[1]}"
            if e.module:
                args["module"] = e.module
            if e.sync:
                args["sync"] = e.sync
            if e.tags:
                args["tags"] = list(e.tags)
            events.append({"ph": "X", "name": e.name, "pid": 0, "tid": 0, "ts": us(e.start_ns),
                           "dur": max(e.dur_ns / 1000.0, 0.001), "args": args})
        for f in self.findings:
            events.append({"ph": "i", "s": "g", "name": f"{f.severity.upper()} {f.rule}: {f.title}", "pid": 0,
                           "tid": 0, "ts": us(f.first_ns or t0),
                           "args": {"source": f.location, "fix": f.fix, **{k: v for k, v in f.weight.items()}}})
        return json.dumps({"traceEvents": events, "displayTimeUnit": "ms",
                           "otherData": {"schema": SCHEMA, "schema_version": SCHEMA_VERSION}}) + "\n"


def _fmt(value: float) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.3g}"
    return f"{int(value):,}"




def sort_key(f: Finding) -> Tuple[int, float]:
    heaviness = max([v for k, v in f.weight.items() if k.endswith("share")] + [0.0])
    return SEVERITIES.index(f.severity), -heaviness
