"""``audit_model``: which aten ops a model runs, and how each would run on torch_npu of a given version.

::

    report = audit_model(model, torch.randn(1, 3, 224, 224), torch_npu_version="2.5", backward=True)
    print(report.summary())   # "Operator Coverage: 98.5% native, 2 CPU fallback ops"
    print(report.text())      # per-op detail, known rewrites
    report.to_dict()          # the same as data (report.to_json() as JSON)

The model runs once, as it is (train/eval mode, grad mode and device untouched: on the CPU unless its
parameters are on the NPU), under the op observer (:class:`OpRecorder`, an
:class:`ascend_compat.observe.OpObserver`). It therefore sees ops as they reach a backend, after
torch's CompositeImplicitAutograd decompositions. Each op is routed like the dispatcher would route it
on the NPU (:mod:`ascend_compat.observe.routing`) with the native-op table of the chosen torch_npu
version (``ascend_compat.data.native_ops``):

* ``native``: torch_npu has its own kernel;
* ``composite``: no kernel of its own, but a composite kernel runs on the NPU; the recorder runs that
  kernel, so the ops it is made of are recorded (and judged) too, as on the device;
* ``cpu_fallback``: torch_npu would run it on the CPU (its boxed CPU fallback);
* ``unsupported_dtype``: native or composite, but called with a dtype torch_npu's kernel for it
  refuses (``knowledge.operators.dtype_refusals``: ``sort(stable=True)`` or ``max(x, dim)`` of float64,
  ``isclose`` of bfloat16, ...); the note says what torch_npu does. Other float64 ops run in float64,
  as on torch_npu; a dtype-only cast to float64 (``x.double()``) gives float32 there, with a warning
  (``knowledge.operators.downcasts_to_float32``): such casts keep their status and carry a note;
* ``other``: an op outside the ``aten``/``npu`` namespaces (e.g. ``torchvision::nms``), not judged.

Coverage is reported by distinct ops (the headline) and by calls: the share of judged ops that run on
the NPU (``native`` or ``composite``). Host-specific ops the CPU picks where the NPU picks another
(``_scaled_dot_product_flash_attention_for_cpu``) are judged as the op the NPU runs instead.
Recording is per thread (DataLoader worker processes are not seen).
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ascend_compat.knowledge import operators
from ascend_compat.observe import routing
from ascend_compat.observe.frames import Frame, user_frame
from ascend_compat.observe.observer import OpCall, OpObserver

__all__ = ["audit_model", "OpRecorder", "AuditReport", "AuditOp", "REWRITES"]

NATIVE, COMPOSITE, FALLBACK, OTHER = routing.NATIVE, routing.COMPOSITE, routing.FALLBACK, routing.OTHER
UNSUPPORTED = "unsupported_dtype"

#: op (base name) -> (advice, native overloads it uses): the knowledge layer's table, under its first name
REWRITES = operators.FALLBACK_REWRITES

_HOST_EQUIVALENTS = {
    # CPU's choice inside scaled_dot_product_attention; on the NPU torch_npu's own kernel runs.
    "_scaled_dot_product_flash_attention_for_cpu": "scaled_dot_product_attention",
    "_scaled_dot_product_flash_attention_for_cpu_backward": "scaled_dot_product_attention",
}


@dataclass(frozen=True)
class AuditOp:
    """One recorded op: ``op`` (``"aten::addmm"``), ``calls``, ``status``, ``dtypes`` seen in its tensor
    inputs and outputs, ``unsupported_dtypes`` (those torch_npu's kernel refuses), ``phases``
    (``forward``/``backward``), ``first_frame`` (user frame of the first call), ``rewrite`` (known
    advice, or None), ``note`` (why a dtype is refused, a float64 downcast, a host-specific op)."""

    op: str
    calls: int
    status: str
    dtypes: Tuple[str, ...]
    unsupported_dtypes: Tuple[str, ...]
    phases: Tuple[str, ...]
    first_frame: Optional[Frame]
    rewrite: Optional[str] = None
    note: Optional[str] = None

    @property
    def runs_on_npu(self) -> bool:
        return self.status in (NATIVE, COMPOSITE)

    def to_dict(self) -> Dict[str, Any]:
        return {"op": self.op, "calls": self.calls, "status": self.status, "dtypes": list(self.dtypes),
                "unsupported_dtypes": list(self.unsupported_dtypes), "phases": list(self.phases),
                "first_frame": self.first_frame._asdict() if self.first_frame else None,
                "rewrite": self.rewrite, "note": self.note}


def _pct(part: int, whole: int) -> str:
    if whole == 0:
        return "100.0%"
    value = 100.0 * part / whole
    text = f"{value:.1f}%"
    if text == "100.0%" and part < whole:  # never round a gap away
        text = "99.9%"
    if text == "0.0%" and part > 0:
        text = "0.1%"
    return text


@dataclass(frozen=True)
class AuditReport:
    """What :func:`audit_model` / :class:`OpRecorder` found; ops in first-call order."""

    torch_npu_version: str
    ops: Tuple[AuditOp, ...]
    device: str = "cpu"
    backward: bool = False

    @property
    def phases(self) -> Tuple[str, ...]:
        """``("forward",)`` or ``("forward", "backward")``: the phases in which ops were recorded."""
        seen = {p for o in self.ops for p in o.phases}
        return tuple(p for p in ("forward", "backward") if p in seen)

    def _judged(self) -> List[AuditOp]:
        return [o for o in self.ops if o.status != OTHER]

    def by_status(self, status: str) -> List[AuditOp]:
        return [o for o in self.ops if o.status == status]

    @property
    def fallbacks(self) -> List[AuditOp]:
        return self.by_status(FALLBACK)

    @property
    def unsupported(self) -> List[AuditOp]:
        return self.by_status(UNSUPPORTED)

    @property
    def coverage_by_ops(self) -> float:
        """Fraction of distinct judged ops that run on the NPU (native or composite)."""
        judged = self._judged()
        return sum(o.runs_on_npu for o in judged) / len(judged) if judged else 1.0

    @property
    def coverage_by_calls(self) -> float:
        """Fraction of calls of judged ops that run on the NPU."""
        judged = self._judged()
        total = sum(o.calls for o in judged)
        return sum(o.calls for o in judged if o.runs_on_npu) / total if total else 1.0

    def __getitem__(self, op: str) -> AuditOp:
        """The record of ``op`` (``"aten::addmm"``, ``"addmm"`` or ``"aten.addmm.default"``)."""
        from ascend_compat.data import normalize_op_name

        want = normalize_op_name(op)
        for o in self.ops:
            if normalize_op_name(o.op) == want and (o.op.startswith("aten::") or "::" in op):
                return o
        raise KeyError(op)

    def __contains__(self, op: str) -> bool:
        try:
            self[op]
        except KeyError:
            return False
        return True

    def summary(self) -> str:
        """``"Operator Coverage: 98.5% native, 2 CPU fallback ops"`` (by distinct ops), plus the
        unsupported-dtype count when there are any."""
        judged = self._judged()
        ok = sum(o.runs_on_npu for o in judged)
        fb = len(self.fallbacks)
        line = f"Operator Coverage: {_pct(ok, len(judged))} native, {fb} CPU fallback op{'' if fb == 1 else 's'}"
        ud = len(self.unsupported)
        if ud:
            line += f", {ud} op{'' if ud == 1 else 's'} with unsupported dtypes"
        return line

    def text(self) -> str:
        """A readable report: summary, totals by distinct ops and by calls, then every problem op."""
        judged = self._judged()
        calls = sum(o.calls for o in judged)
        ok_calls = sum(o.calls for o in judged if o.runs_on_npu)
        lines = [
            self.summary(),
            f"  torch_npu {self.torch_npu_version} op tables; recorded on {self.device} "
            f"({' and '.join(self.phases) or 'nothing ran'})",
            f"  by distinct ops: {sum(o.runs_on_npu for o in judged)} of {len(judged)} run on the NPU "
            f"({len(self.by_status(NATIVE))} native, {len(self.by_status(COMPOSITE))} composite)",
            f"  by calls: {ok_calls} of {calls} ({_pct(ok_calls, calls)}) run on the NPU",
        ]
        for title, status in (("CPU fallback", FALLBACK), ("unsupported dtype", UNSUPPORTED),
                              ("not judged (not an aten op)", OTHER)):
            group = self.by_status(status)
            if not group:
                continue
            lines.append(f"{title}:")
            for o in group:
                where = f", first at {o.first_frame}" if o.first_frame else ""
                dt = f" [{', '.join(o.unsupported_dtypes)}]" if status == UNSUPPORTED else ""
                lines.append(f"  {o.op}{dt}: {o.calls} call(s), {'/'.join(o.phases)}{where}")
                if o.rewrite:
                    lines.append(f"    rewrite: {o.rewrite}")
                if o.note:
                    lines.append(f"    note: {o.note}")
        return "\n".join(lines)

    __str__ = summary

    def to_dict(self) -> Dict[str, Any]:
        judged = self._judged()
        return {
            "torch_npu_version": self.torch_npu_version, "device": self.device, "backward": self.backward,
            "phases": list(self.phases),
            "summary": self.summary(),
            "coverage": {"by_ops": self.coverage_by_ops, "by_calls": self.coverage_by_calls,
                         "distinct_ops": len(judged), "calls": sum(o.calls for o in judged)},
            "counts": {s: len(self.by_status(s)) for s in (NATIVE, COMPOSITE, FALLBACK, UNSUPPORTED, OTHER)},
            "ops": [o.to_dict() for o in self.ops],
        }

    def to_json(self, indent: Optional[int] = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def diff(self, other: "AuditReport") -> List[Dict[str, Any]]:
        """Ops whose status differs between this report and ``other`` (None where an op was not run):
        ``[{"op", "<this version>": status, "<other version>": status}]``, keyed ``"a"``/``"b"`` when
        both reports use the same version."""
        ka, kb = self.torch_npu_version, other.torch_npu_version
        if ka == kb:
            ka, kb = "a", "b"
        mine = {o.op: o.status for o in self.ops}
        theirs = {o.op: o.status for o in other.ops}
        out = []
        for op in list(mine) + [op for op in theirs if op not in mine]:
            if mine.get(op) != theirs.get(op):
                out.append({"op": op, ka: mine.get(op), kb: theirs.get(op)})
        return out


class _Rec:
    __slots__ = ("op", "calls", "kind", "dtypes", "bad", "why", "downcasts", "phases", "frame", "note")

    def __init__(self, op, kind, frame, note):
        self.op, self.kind, self.frame, self.note = op, kind, frame, note
        self.calls = self.downcasts = 0
        self.dtypes, self.bad, self.why, self.phases = set(), set(), [], []


class _OpInfo:
    """What the recorder keeps per OpOverload: name, status, note, the dtypes torch_npu refuses for it."""

    __slots__ = ("name", "kind", "note", "refusals", "dim_pos", "is_to_copy")

    def __init__(self, name, kind, note, refusals, dim_pos, is_to_copy):
        self.name, self.kind, self.note = name, kind, note
        self.refusals, self.dim_pos, self.is_to_copy = refusals, dim_pos, is_to_copy


class OpRecorder(OpObserver):
    """Context manager recording (and routing) every aten op run in this thread; see the module docstring.

    ``recorder.report()`` gives an :class:`AuditReport` (callable during or after recording).
    """

    def __init__(self, torch_npu_version: Optional[str] = None):
        from ascend_compat import data

        self.torch_npu_version = data.resolve_version(torch_npu_version)
        self._native = data.native_ops(self.torch_npu_version)
        self._recs: Dict[str, _Rec] = {}
        self._infos: Dict[object, _OpInfo] = {}
        self._lock = threading.Lock()
        self.device = "cpu"
        self.backward = False
        super().__init__(router=routing.Router(routing.table_predicate(self._native)), route_everything=True)

    def report(self) -> AuditReport:
        with self._lock:
            recs = list(self._recs.values())
        ops = []
        for r in recs:
            status = r.kind
            note = r.note
            if r.bad and status in (NATIVE, COMPOSITE):
                status = UNSUPPORTED
                note = "; ".join(r.why)
            elif r.downcasts and note is None:
                note = (f"{r.downcasts} dtype-only cast(s) to float64 (x.double(), x.to(torch.float64)): torch_npu "
                        f"gives float32 here and warns once: \"{operators.float64_downcast_message()}\"")
            rewrite = None
            if status == FALLBACK:
                rewrite = operators.rewrite_for(r.op)
            elif status == UNSUPPORTED:
                rewrite = ("cast to a dtype the kernel takes (float32: x.float(), model.float()) or keep this part "
                           "on the CPU explicitly")
            ops.append(AuditOp(r.op, r.calls, status, tuple(sorted(r.dtypes)), tuple(sorted(r.bad)),
                               tuple(r.phases), r.frame, rewrite, note))
        return AuditReport(self.torch_npu_version, tuple(ops), self.device, self.backward)

    def _info(self, call: OpCall) -> _OpInfo:
        """What is known of ``call``'s OpOverload (cached)."""
        func = call.func
        found = self._infos.get(func)
        if found is not None:
            return found
        kind, note = call.kind, None
        key = routing.op_key(func)
        equivalent = _HOST_EQUIVALENTS.get(key)
        if equivalent is not None and kind == FALLBACK:
            note = f"the CPU's choice inside {equivalent}; on the NPU aten::{equivalent} runs instead"
            kind = NATIVE if equivalent in self._native else FALLBACK
        refusals = operators.dtype_refusals(key) if call.name.startswith("aten::") else {}
        dim_pos = None
        if any(r.needs_dim for r in refusals.values()):
            dim_pos = next((i for i, a in enumerate(func._schema.arguments) if a.name == "dim"), None)
        found = self._infos[func] = _OpInfo(call.name, kind, note, refusals, dim_pos,
                                            call.name == "aten::_to_copy")
        return found

    def on_composite(self, call: OpCall) -> None:
        self._record(call, self._info(call), _tensors((call.args, call.kwargs), []))

    def on_op(self, call: OpCall):
        info = self._info(call)
        out = call.run()
        self._record(call, info, _tensors((call.args, call.kwargs, out), []))
        return out

    def _record(self, call: OpCall, info: _OpInfo, tensors) -> None:
        import torch

        name = info.name
        rec = self._recs.get(name)
        if rec is None:
            found = user_frame(call.caller)
            with self._lock:
                rec = self._recs.setdefault(name, _Rec(name, info.kind, Frame(*found) if found else None, info.note))
        rec.calls += 1
        phase = "backward" if torch._C._current_autograd_node() is not None else "forward"
        if phase not in rec.phases:
            rec.phases.append(phase)
        for t in tensors:
            rec.dtypes.add(str(t.dtype)[6:])
        args, kwargs = call.args, call.kwargs
        first = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if first is None:
            return
        if info.refusals:
            refusal = info.refusals.get(str(first.dtype)[6:])
            if refusal is not None and (not refusal.needs_dim or _given(args, kwargs, info.dim_pos, "dim")):
                if refusal.dtype not in rec.bad:
                    rec.bad.add(refusal.dtype)
                    rec.why.append(refusal.reason)
        elif info.is_to_copy and kwargs.get("dtype") is torch.float64 and operators.downcasts_to_float32(
                str(first.dtype)[6:], "float64", kwargs.get("layout") is not None, kwargs.get("device") is not None):
            rec.downcasts += 1

    def __enter__(self) -> "OpRecorder":
        if self.observing:
            raise RuntimeError("this OpRecorder is already recording")
        self.start_observing()
        return self


def _given(args, kwargs, pos, name) -> bool:
    value = args[pos] if pos is not None and pos < len(args) else kwargs.get(name)
    return value is not None


def _tensors(obj, out: list) -> list:
    import torch

    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for e in obj:
            _tensors(e, out)
    elif isinstance(obj, dict):
        for e in obj.values():
            _tensors(e, out)
    return out


# ---------------------------------------------------------------- audit_model

def _move(obj, device):
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, tuple):
        return tuple(_move(e, device) for e in obj)
    if isinstance(obj, list):
        return [_move(e, device) for e in obj]
    if isinstance(obj, dict):
        return {k: _move(v, device) for k, v in obj.items()}
    return obj


def _first_float_tensor(obj):
    import torch

    if isinstance(obj, torch.Tensor):
        return obj if obj.requires_grad else None
    values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()
    if not values and hasattr(obj, "to_tuple"):  # transformers ModelOutput
        values = obj.to_tuple()
    for v in values:
        found = _first_float_tensor(v)
        if found is not None:
            return found
    return None


def audit_model(model, sample_input, torch_npu_version: Optional[str] = None, backward: bool = False,
                device=None) -> AuditReport:
    """Run ``model`` once on ``sample_input`` and classify every aten op it runs for torch_npu
    ``torch_npu_version`` (None = newest table; "2.5", "2.5.1.post1" and torch versions accepted).

    ``sample_input``: a tensor (``model(x)``), a tuple/list (``model(*args)``) or a dict
    (``model(**kwargs)``); tensors in it are moved to the model's device. ``device``: where to run;
    default the device of the model's first parameter (CPU for a parameterless model). The model is
    not moved: a ``device`` that differs from its parameters' raises ValueError.
    ``backward=True`` also runs backward from the first output tensor that requires grad (with a
    gradient of ones); parameters' ``.grad`` are restored afterwards. Returns an :class:`AuditReport`.
    """
    import torch

    params = list(model.parameters()) if hasattr(model, "parameters") else []
    model_device = params[0].device if params else torch.device("cpu")
    run_device = torch.device(device) if device is not None else model_device
    if params and run_device != model_device and not (run_device.index is None
                                                       and run_device.type == model_device.type):
        raise ValueError(f"audit_model: the model's parameters are on {model_device} but device={run_device}; "
                         f"move the model first (model.to({str(run_device)!r})) or leave device unset")
    inputs = _move(sample_input, run_device)
    saved = [p.grad for p in params]
    recorder = OpRecorder(torch_npu_version)
    recorder.device, recorder.backward = str(run_device), backward
    try:
        with recorder:
            if isinstance(inputs, dict):
                out = model(**inputs)
            elif isinstance(inputs, (tuple, list)):
                out = model(*inputs)
            else:
                out = model(inputs)
        if backward:
            target = _first_float_tensor(out)
            if target is None:
                raise ValueError("audit_model(backward=True): no output tensor requires grad (is grad mode "
                                 "off, or does the model have no trainable parameters?)")
            grad = torch.ones_like(target)
            for p in params:  # backward then writes fresh tensors; the saved ones stay untouched
                p.grad = None
            with recorder:
                torch.autograd.backward(target, grad)
    finally:
        for p, g in zip(params, saved):
            p.grad = g
    return recorder.report()
