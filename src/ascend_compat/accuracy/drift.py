"""Whole-run drift: where a run starts to lose accuracy against a reference run.

Two run records (:mod:`.runrecord`) of the same script are compared: the reference (the script on the
host in float64 or float32, or on a CUDA machine with the shim off) and the run being checked. Per step,
the losses side by side; then, in the order the modules finished their forward, each module's output
against the reference's: the first module whose output **drifts beyond the standard** is named, with its
``path:line``; inside it, the first op whose output drifts beyond the *module's* standard (where the
module loses the precision it delivers: a bfloat16 cast inside a float32 module); then the parameter
gradients at ``optimizer.step()`` (reported, not judged: every module before them feeds their error).

The standard for a drift, per the checked run's dtype of the value: its relative error (the RMS of the
difference over the RMS of the reference, estimated from the records' random projections) exceeds twice
msprobe's minimum error for that dtype (its benchmark limit for the RMSE ratio times ``_minmum_err``:
float32 2^-13, float16 2^-10, bfloat16 2^-7; ``data/accuracy_standard.json``; for a module computed under
autocast, its autocast dtype's; for a float32 one while torch_npu's HF32 switches are on, float16's, whose
10-bit mantissa HF32 has: what the run computes in by design, as CUDA's AMP and TF32 would) **and** exceeds
:data:`GROWTH` times the error the module's input already carried, so a module that only passes an
earlier drift on is not blamed for it. Against a float64 reference this finds the module where precision
is lost (a bfloat16 cast inside a float32 LayerNorm, a float16 reduction), which no single op shows: each
op is exact for the dtypes it is given.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ascend_compat._files import display_path as _short
from ascend_compat.accuracy.runrecord import relative_error
from ascend_compat.accuracy.standard import finite_or_text as _finite

__all__ = ["compare_runs", "DriftReport", "limit", "module_limit", "GROWTH"]

#: how much larger than its input's a module's output error must be to count as its own drift
GROWTH = 4.0


def limit(dtype: str) -> float:
    """The relative error a value of ``dtype`` may carry (see the module docstring)."""
    from ascend_compat import data

    table = data.accuracy_standard()
    cfg = table["dtype"].get(dtype, table["dtype"]["default"])
    return cfg["minimum_err"] * table["benchmark_ratio"]["rmse"]


@dataclass
class Finding:
    """A drifting module, op or gradient: ``where`` (module path / op name / parameter), ``step``,
    ``site`` (``[file, line]`` or None), ``error`` (relative), ``carried`` (its input's), ``limit``."""

    kind: str
    where: str
    step: int
    error: float
    limit: float
    carried: float = 0.0
    site: Optional[List[Any]] = None
    module: str = ""
    call: int = 1
    dtype: str = ""

    @property
    def location(self) -> str:
        return f"{self.site[0]}:{self.site[1]}" if self.site else "<no user frame>"

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "where": self.where, "module": self.module or None, "call": self.call,
                "step": self.step, "dtype": self.dtype,
                "site": None if not self.site else {"file": self.site[0], "line": self.site[1]},
                "error": _finite(self.error), "carried": _finite(self.carried), "limit": self.limit}


@dataclass
class DriftReport:
    """What :func:`compare_runs` found."""

    reference: Dict[str, Any]
    losses: List[Tuple[int, List[float], List[float]]] = field(default_factory=list)
    first_module: Optional[Finding] = None
    first_op: Optional[Finding] = None
    first_grad: Optional[Finding] = None
    worst_grad: Optional[Finding] = None
    modules_compared: int = 0
    unmatched: int = 0
    op_note: str = ""

    @property
    def drifts(self) -> bool:
        """A module drifts beyond the standard (gradients are reported, not judged: every module before
        them feeds their error)."""
        return self.first_module is not None

    def text(self) -> str:
        ref = self.reference
        lines = [f"whole-run drift against the reference run ({ref.get('precision', 'as run')}, "
                 f"{ref.get('device', '?')}): {self.modules_compared} module outputs compared"
                 + (f", {self.unmatched} without a counterpart" if self.unmatched else "")]
        for step, mine, theirs in self.losses[:10]:
            pairs = ", ".join(f"{a:.6g} vs {b:.6g} ({_rel(a, b)})" for a, b in zip(mine, theirs))
            lines.append(f"  step {step} loss: {pairs or 'none recorded'}")
        if len(self.losses) > 10:
            lines.append(f"  ... {len(self.losses) - 10} more steps (--format json lists them all)")
        f = self.first_module
        if f is None:
            lines.append("no module drifts beyond the standard")
        else:
            lines.append(f"first module drifting beyond the standard: {_short(f.location)}: {f.where} (call {f.call}, "
                         f"step {f.step}, {f.dtype}): relative error {f.error:.3g} (limit {f.limit:.3g}; its input "
                         f"carried {f.carried:.3g})")
            o = self.first_op
            if o is not None:
                lines.append(f"  first op drifting in it: {_short(o.location)}: {o.where} (call {o.call}, {o.dtype}): "
                             f"relative error {o.error:.3g}")
            elif self.op_note:
                lines.append(f"  {self.op_note}")
        w, g = self.worst_grad, self.first_grad
        if w is not None:
            lines.append(f"gradients at optimizer.step() (reported, not judged): largest relative error {w.error:.3g} ({w.where}, step {w.step}"
                         f", {w.dtype} limit {w.limit:.3g})"
                         + (f"; the first beyond its limit: {g.where} (step {g.step})" if g is not None else
                            "; all within their limit"))
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        return {"reference": self.reference, "drifts": self.drifts, "modules_compared": self.modules_compared,
                "unmatched": self.unmatched,
                "losses": [{"step": s, "run": a, "reference": b} for s, a, b in self.losses],
                "first_module": self.first_module.to_dict() if self.first_module else None,
                "first_op": self.first_op.to_dict() if self.first_op else None,
                "first_grad": self.first_grad.to_dict() if self.first_grad else None,
                "worst_grad": self.worst_grad.to_dict() if self.worst_grad else None,
                "op_note": self.op_note or None}


def compare_runs(run: Dict[str, Any], reference: Dict[str, Any]) -> DriftReport:
    """Compare the record ``run`` with the record ``reference`` (dicts as :func:`.runrecord.load` gives)."""
    report = DriftReport(reference=dict(reference.get("run", {})))
    governed = _governed(run)
    ref_steps = {s["step"]: s for s in reference["steps"]}
    for step in run["steps"]:
        ref = ref_steps.get(step["step"])
        if ref is None:
            continue
        report.losses.append((step["step"], list(step["losses"]), list(ref["losses"])))
        theirs = {(m["module"], m["call"]): m for m in ref["modules"]}
        for m in step["modules"]:
            other = theirs.get((m["module"], m["call"]))
            if other is None or m["output"] is None or other["output"] is None:
                report.unmatched += 1
                continue
            report.modules_compared += 1
            if report.first_module is not None:
                continue
            found = _drift("module", m["module"], step["step"], m["output"], other["output"],
                           _carried(m.get("input"), other.get("input")), m.get("site"), m["module"], m["call"],
                           bound=module_limit(m, governed))
            if found is not None:
                report.first_module = found
                report.first_op, report.op_note = _first_op(step, ref, found)
        _grads(report, step, ref)
    return report


def module_limit(m: Dict[str, Any], hf32_modules: Optional[Dict[str, set]] = None) -> float:
    """The relative error a module's output may carry: its dtype's, or wider where the run computes in less
    by design - autocast's dtype; HF32 (float16's 10-bit mantissa) for a float32 module that runs a
    convolution or matmul (``hf32_modules``: module path -> the groups its ops belong to, from the op records;
    None when there are none: then any float32 module) while torch_npu's switch for it is on."""
    bound = limit(m["output"]["dtype"])
    if m.get("autocast"):
        bound = max(bound, limit(m["autocast"]))
    groups = set(m.get("hf32") or ())
    if groups and m["output"]["dtype"] == "float32":
        path = m["module"]
        inside = set() if hf32_modules is not None else groups
        for where, found in (hf32_modules or {}).items():
            if where == path or where.startswith(path + "."):
                inside |= found
        if groups & inside:
            bound = max(bound, limit("float16"))
    return bound


def _governed(run: Dict[str, Any]) -> Optional[Dict[str, set]]:
    """Module path -> the HF32 groups (``conv``, ``matmul``) of the ops recorded in it (None: no op records)."""
    from ascend_compat.accuracy.hostrun import group_of

    ops = [o for s in run["steps"] for o in s["ops"]]
    if not ops:
        return None
    out: Dict[str, set] = {}
    for o in ops:
        group = group_of(o["op"].split(".")[0])
        if group:
            out.setdefault(o["module"], set()).add(group)
    return out


def _carried(mine, theirs) -> float:
    if not mine or not theirs:
        return 0.0
    return relative_error(mine, theirs)


def _drift(kind, where, step, mine, theirs, carried, site, module="", call=1, bound=None) -> Optional[Finding]:
    error = relative_error(mine, theirs)
    bound = limit(mine["dtype"]) if bound is None else bound
    if error > bound and (math.isinf(error) and not math.isinf(carried) or error > GROWTH * carried):
        return Finding(kind, where, step, error, bound, carried, site, module, call, mine["dtype"])
    return None


def _first_op(step, ref, module: Finding) -> Tuple[Optional[Finding], str]:
    if not step["ops"]:
        return None, (f"no op records for step {module.step} (ops are recorded for the first steps only; "
                      "record both runs with more --op-steps to see the op)")
    theirs = {(o["module"], o["op"], o["call"], o["phase"]): o for o in ref["ops"]}
    for o in step["ops"]:
        if o["module"] != module.where or o["phase"] != "forward":
            continue
        other = theirs.get((o["module"], o["op"], o["call"], o["phase"]))
        if other is None:
            continue
        found = _drift("op", o["op"], step["step"], o["output"], other["output"], module.carried, o.get("site"),
                       o["module"], o["call"], bound=module.limit)
        if found is not None:
            return found, ""
    return None, "no single op in it drifts beyond the standard (the drift builds up across its ops)"


def _grads(report: DriftReport, step, ref) -> None:
    for name, mine in step["grads"].items():
        theirs = ref["grads"].get(name)
        if theirs is None:
            continue
        error = relative_error(mine, theirs)
        bound = limit(mine["dtype"])
        finding = Finding("grad", name, step["step"], error, bound, dtype=mine["dtype"])
        if report.worst_grad is None or error / bound > report.worst_grad.error / report.worst_grad.limit:
            report.worst_grad = finding
        if report.first_grad is None and error > bound:
            report.first_grad = finding


def _rel(a: float, b: float) -> str:
    if a == b:
        return "equal"
    if b == 0 or not (math.isfinite(a) and math.isfinite(b)):
        return "differs"
    return f"{(a - b) / abs(b):+.2e}"

