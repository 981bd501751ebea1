"""The live recorder: a ``TorchDispatchMode`` that notes every NPU op of the recorded steps.

:func:`profile` returns a :class:`Recorder`, a context manager. Steps are marked by
:meth:`Recorder.step` or, with ``auto_step=True``, by every ``optimizer.step()``. The first
``warmup`` steps (lazy initialisation, first-call allocations) are left out of the report, then
``steps`` steps are recorded (``None``: until exit). With ``stop_after=True`` the end of the last recorded step
raises :class:`StopProfiling` (a ``SystemExit``, so the user's ``except Exception`` does not swallow
it), which ``ascend-compat profile`` uses to end a long script early.

The recorder is an op observer (:class:`ascend_compat.observe.OpObserver`): ops are routed as the
dispatcher would route them on torch_npu (:mod:`ascend_compat.observe.routing`: native, composite -
whose pieces are then recorded - or CPU fallback), with the emulated version's table under the
simulator and the dispatcher's own registrations on real torch_npu. Every op still runs the kernel it
would have run, so results are unchanged. Dispatch modes are per thread: enter and exit a recorder in
the thread that runs the step (backward started there is seen too).
"""
from __future__ import annotations

import time
import weakref
from typing import Any, Dict, List, Optional, Tuple

from ascend_compat.knowledge.operators import LIBRARY_SYNCS
from ascend_compat.observe import routing
from ascend_compat.observe.frames import library_caller, user_frame, user_frame_and_kernel
from ascend_compat.observe.observer import OpCall, OpObserver, device_name
from ascend_compat.observe.phases import SETUP, TRAIN
from ascend_compat.perf.events import OpEvent, StepRecord

__all__ = ["profile", "Recorder", "StopProfiling"]

#: ops whose output size depends on the data: the host must wait for the device to size the result
DATA_DEPENDENT = frozenset({
    "aten::nonzero", "aten::masked_select", "aten::_unique2", "aten::unique_dim", "aten::unique_consecutive",
    "aten::_unique", "aten::repeat_interleave.Tensor", "aten::argwhere", "aten::nonzero_static",
})
#: indexing ops that become data-dependent (a hidden ``nonzero``) when an index is a boolean mask
BOOL_INDEXED = frozenset({"aten::index.Tensor", "aten::index_put_", "aten::index_put", "aten::_index_put_impl_"})
#: matmul / convolution ops whose inputs are checked for layout
MATMUL_CONV = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::convolution",
                         "aten::_convolution", "aten::convolution_backward"})
_CONV = frozenset({"aten::convolution", "aten::_convolution", "aten::convolution_backward"})


class StopProfiling(SystemExit):
    """Raised at the end of the last recorded step by a recorder made with ``stop_after=True``."""

    def __init__(self) -> None:
        super().__init__(0)


def profile(steps: Optional[int] = None, warmup: int = 0, auto_step: bool = False,
            stop_after: bool = False, max_events: int = 1_000_000, start_phase: Optional[str] = None) -> "Recorder":
    """A :class:`Recorder` (use it as a context manager around the training loop)."""
    return Recorder(steps=steps, warmup=warmup, auto_step=auto_step, stop_after=stop_after,
                    max_events=max_events, start_phase=start_phase)


class Recorder(OpObserver):
    """Records the NPU ops of steps ``warmup .. warmup + steps - 1`` (see the module docstring)."""

    def __init__(self, steps: Optional[int] = None, warmup: int = 0, auto_step: bool = False,
                 stop_after: bool = False, max_events: int = 1_000_000, start_phase: Optional[str] = None) -> None:
        if steps is not None and steps < 1:
            raise ValueError(f"steps must be at least 1, got {steps}")
        if warmup < 0:
            raise ValueError(f"warmup must not be negative, got {warmup}")
        if stop_after and steps is None:
            raise ValueError("stop_after needs a number of steps")
        self.steps, self.warmup = steps, warmup
        self.auto_step, self.stop_after, self.max_events = auto_step, stop_after, max_events
        self._record = StepRecord()
        self._step = 0
        self._recording = False
        self._step_start = 0
        self._handles: List[Any] = []
        self._softmax_out: "weakref.WeakValueDictionary[int, Any]" = weakref.WeakValueDictionary()
        self._lifted: Optional[Any] = None  # weakref to the last CPU tensor built from Python data
        self._producers: Dict[int, Tuple[Any, int]] = {}  # id(tensor) -> (weakref, seq of the event that made it)
        self._seq = 0
        self._composites = 0  # composite ops running now (their pieces are tagged "inner")
        self._fused: Optional[Tuple[Any, OpEvent]] = None  # (args of the simulated fused op running, its event)
        self._str_original = None
        if start_phase is None:  # around a whole script (auto_step) the run starts with its set-up
            start_phase = SETUP if auto_step else TRAIN
        super().__init__(own_thread=True, modules=True, phases=start_phase, on_optimizer_step=self._optimizer_step)

    # ------------------------------------------------------------------ steps
    @property
    def current_step(self) -> int:
        return self._step

    def _update_recording(self) -> None:
        # warm-up steps are recorded too and left out by record(), so that a run that never reaches
        # the end of its warm-up (a script without optimizer.step()) still has something to report
        last = None if self.steps is None else self.warmup + self.steps - 1
        self._recording = last is None or self._step <= last
        if self._recording:
            self._step_start = time.perf_counter_ns()
            if self._step not in self._record.steps:
                self._record.steps.append(self._step)

    def step(self) -> None:
        """End the current step and start the next one."""
        if self._recording:
            self._record.step_ns[self._step] = (self._step_start, time.perf_counter_ns())
        finished = self._recording and self.steps is not None and self._step == self.warmup + self.steps - 1
        self._step += 1
        self.module_stack.clear()
        self._update_recording()
        if finished and self.stop_after:
            raise StopProfiling()

    # ------------------------------------------------------------------ enter / exit
    def __enter__(self) -> "Recorder":
        if self.observing:
            raise RuntimeError("this recorder is already active")
        self.router = routing.backend_router()
        self._flops = _flop_formulas()
        self.start_observing()
        self._install_hooks()
        self._update_recording()
        return self

    def __exit__(self, *exc_info) -> None:
        if self._recording and self._step not in self._record.step_ns:
            self._record.step_ns[self._step] = (self._step_start, time.perf_counter_ns())
        self._recording = False
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        if self._str_original is not None:
            import torch._tensor_str

            torch._tensor_str._str = self._str_original
            self._str_original = None
        self.stop_observing(exc_info)

    def record(self) -> StepRecord:
        """The recorded steps after the warm-up (all steps, with a note, when the run ended first). The
        warm-up leaves out training-step events only: evaluation, checkpointing and set-up are kept from
        every recorded step (they run once or rarely, the warm-up among them)."""
        full = self._record
        wanted = [s for s in full.steps if s >= self.warmup]
        notes = list(full.notes)
        if not wanted:
            wanted = list(full.steps)
            notes.append(f"the run ended before its {self.warmup} warm-up step(s) were over (no step boundary: "
                         "optimizer.step() or Recorder.step()); everything it ran is reported as one step")
        keep = set(wanted)
        return StepRecord(steps=wanted, step_ns={k: v for k, v in full.step_ns.items() if k in keep},
                          events=[e for e in full.events if e.step in keep or e.phase != TRAIN],
                          optimizers=dict(full.optimizers),
                          dropped=full.dropped, source=full.source, notes=notes, stopped=full.stopped)

    def report(self, backend: str = "", phases: Tuple[str, ...] = (TRAIN,)):
        """The findings (:class:`ascend_compat.perf.report.Report`) of what was recorded in ``phases``
        (training steps by default); ``backend`` names where it ran, for the report's header."""
        from ascend_compat.perf.rules import analyze

        return analyze(self.record(), backend, phases)

    def stopped(self, why: str) -> None:
        """Say why the run was stopped before its end (the report shows it first)."""
        self._record.stopped = why

    # ------------------------------------------------------------------ hooks
    def _install_hooks(self) -> None:
        from torch.optim import optimizer as optim_module

        self._handles.append(optim_module.register_optimizer_step_pre_hook(self._optimizer_pre))
        import torch._tensor_str

        original = torch._tensor_str._str
        recorder = self

        def _str(tensor, *args, **kwargs):
            if recorder._recording and tensor.device.type == device_name():
                recorder._note_print(tensor)
            return original(tensor, *args, **kwargs)

        self._str_original = original
        torch._tensor_str._str = _str

    def _optimizer_pre(self, optimizer, args, kwargs) -> None:
        if self._recording:
            self._record.optimizers[type(optimizer).__name__] = _optimizer_impl(optimizer)

    def _optimizer_step(self) -> None:
        """After an outermost ``optimizer.step()`` (the phase tracker's signal)."""
        if self.auto_step:
            self.step()

    # ------------------------------------------------------------------ events
    def _add(self, event: OpEvent, outs=()) -> None:
        if len(self._record.events) >= self.max_events:
            self._record.dropped += 1
            return
        event.seq = self._seq
        self._seq += 1
        self._record.events.append(event)
        for out in outs:
            self._produced(out, event.seq)

    def _piece(self, kernel, site, module: str, outs, start: int, dur: int, flops: int) -> None:
        """Record a piece of a simulated ``torch_npu`` fused op (its CPU reference runs torch ops, torch_npu one
        kernel) into one event named after the op; ``kernel`` is the simulator's kernel frame."""
        import torch

        args, kwargs = kernel.f_locals.get("args", ()), kernel.f_locals.get("kwargs", {}) or {}
        if self._fused is not None and self._fused[0] is args:
            event = self._fused[1]
            event.dur_ns += dur
            event.flops += flops
            event.out_shapes = tuple(tuple(o.shape) for o in outs)
            event.out_numel = max((o.numel() for o in outs), default=-1)
            for o in outs:
                self._produced(o, event.seq)
            return
        reference = kernel.f_locals.get("reference")
        ins = [t for t in (*args, *kwargs.values()) if isinstance(t, torch.Tensor)]
        tags = []
        backward = torch._C._current_autograd_node() is not None
        if backward:
            tags.append("backward")
        if self.phase_tracker.in_optimizer:
            tags.append("optimizer")
        event = OpEvent(self._step, "npu::" + getattr(reference, "__name__", "fused_op"), "native", site, module,
                        tuple(tuple(t.shape) for t in ins), tuple(str(t.dtype)[6:] for t in ins),
                        max((o.numel() for o in outs), default=-1), flops=flops,
                        out_shapes=tuple(tuple(o.shape) for o in outs), tags=tuple(tags), start_ns=start,
                        dur_ns=dur, phase=self.phase())
        if not backward:
            event.inputs = tuple(self._producer(t) for t in ins)
        self._fused = (args, event)
        self._add(event, outs)

    def _produced(self, tensor, seq: int) -> None:
        key = id(tensor)
        producers = self._producers

        def forget(ref, key=key):
            entry = producers.get(key)
            if entry is not None and entry[0] is ref:
                del producers[key]

        producers[key] = (weakref.ref(tensor, forget), seq)

    def _producer(self, tensor) -> int:
        entry = self._producers.get(id(tensor))
        return entry[1] if entry is not None and entry[0]() is tensor else -1

    def _note_print(self, tensor) -> None:
        self._add(OpEvent(self._step, "print", "other", user_frame(2), self._module(),
                          (tuple(tensor.shape),), (str(tensor.dtype).replace("torch.", ""),),
                          tensor.numel(), d2h=_nbytes(tensor), sync="print", start_ns=time.perf_counter_ns(),
                          phase=self.phase()))

    def _module(self) -> str:
        return self.module_stack.current()

    # ------------------------------------------------------------------ the op hook
    def watching(self) -> bool:
        return self._recording

    def on_op(self, call: OpCall):
        return _observe(self, call)

    def on_composite(self, call: OpCall):
        ins = list(call.tensors())
        if call.name == "aten::lift_fresh" and call.tensor_on_device:
            # torch.tensor(data, device=npu) reaches the mode as lift_fresh of a tensor already on the device,
            # whose composite kernel runs nothing: the copy from the host happened in torch's tensor factory
            t = ins[0]
            module, site = self.origin(call)
            self._add(OpEvent(self._step, call.name, "native", site, module, ((tuple(t.shape)),),
                              (str(t.dtype)[6:],), t.numel(), h2d=_nbytes(t), tags=("construct",),
                              start_ns=time.perf_counter_ns(), phase=self.phase()), [t])
            return None
        # the composite itself is kept as a host-side event (its pieces are the device ops), so that the data
        # flow runs through it: its result is the one later ops consume. Its source line is its first piece's
        # (after_composite): a stack walk per composite would cost as much again
        event = OpEvent(self._step, call.name, "other", None, self._module(), tuple(tuple(t.shape) for t in ins),
                        tuple(str(t.dtype)[6:] for t in ins), tags=("composite",) + (("view",) if call.func.is_view
                                                                                    else ()),
                        start_ns=time.perf_counter_ns(), phase=self.phase())
        if torch_autograd_node() is None:
            event.inputs = tuple(self._producer(t) for t in ins)
        else:
            event.tags += ("backward",)
        self._add(event)
        self._composites += 1
        return event, len(self._record.events)

    def after_composite(self, token, out) -> None:
        import torch

        event, first_piece = token
        self._composites -= 1
        events = self._record.events
        if len(events) > first_piece and events[first_piece].site is not None:
            event.site = events[first_piece].site
        else:
            event.site = user_frame(2)
        outs = [out] if isinstance(out, torch.Tensor) else [o for o in (out if isinstance(out, (list, tuple)) else ())
                                                             if isinstance(o, torch.Tensor)]
        event.out_shapes = tuple(tuple(o.shape) for o in outs)
        event.out_numel = max((o.numel() for o in outs), default=-1)
        if event.seq >= 0:
            for o in outs:
                self._produced(o, event.seq)


def _nbytes(t) -> int:
    return t.numel() * t.element_size()


def _optimizer_impl(optimizer) -> str:
    """``fused``, ``foreach`` or ``single_tensor``: how ``optimizer.step()`` will run its update."""
    defaults = getattr(optimizer, "defaults", {}) or {}
    if defaults.get("fused"):
        return "fused"
    foreach = defaults.get("foreach")
    if foreach is None and "foreach" in defaults:
        from torch.optim.optimizer import _default_to_fused_or_foreach

        params = [p for group in optimizer.param_groups for p in group["params"]]
        _, foreach = _default_to_fused_or_foreach(params, bool(defaults.get("differentiable")), use_fused=False)
    return "foreach" if foreach else "single_tensor"


def torch_autograd_node():
    import torch

    return torch._C._current_autograd_node()


def _flop_formulas():
    from torch.utils.flop_counter import flop_registry

    return flop_registry


def _flops_of(recorder: Recorder, func, args, kwargs, out) -> int:
    formula = recorder._flops.get(func._overloadpacket)
    if formula is None:
        return 0
    try:
        return int(formula(*args, **kwargs, out_val=out))
    except Exception:  # a formula that does not know this overload's arguments: count nothing
        return 0


def _layout_tags(name, ins) -> tuple:
    import torch

    tags = []
    for t in ins:
        if t.dim() < 2 or t.is_contiguous():
            continue
        if name in _CONV and t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last):
            tags.append("channels_last")
        elif not t.transpose(-1, -2).is_contiguous():  # a plain transpose is free on the Cube unit
            tags.append("noncontiguous")
    return tuple(dict.fromkeys(tags))


def _observe(rec: Recorder, call: OpCall):
    """Run one op and record it as an :class:`OpEvent` when it touches the NPU."""
    import torch

    func, args, kwargs = call.func, call.args, call.kwargs
    device = device_name()
    dev_in = call.on_device
    kind = call.kind
    start = time.perf_counter_ns()
    out = call.run()
    dur = time.perf_counter_ns() - start
    Tensor = torch.Tensor
    outs = [out] if isinstance(out, Tensor) else [o for o in (out if isinstance(out, (list, tuple)) else ())
                                                   if isinstance(o, Tensor)]
    dev_out = any(o.device.type == device for o in outs)
    name = call.name
    if name == "aten::lift_fresh" and not dev_in:  # torch.tensor(data) on the CPU: may move next
        rec._lifted = weakref.ref(args[0]) if args else None
    if not (dev_in or dev_out):
        return out
    ins = list(call.tensors())
    site, kernel = user_frame_and_kernel(call.caller)
    module = rec._module()
    if kernel is not None:  # a piece of a simulated torch_npu fused op: one event for the op, as on Ascend
        rec._piece(kernel, site, module, outs, start, dur, _flops_of(rec, func, args, kwargs, out))
        return out
    rec._fused = None
    event = OpEvent(rec._step, name, "cpu_fallback" if kind == routing.FALLBACK else ("native" if dev_in else "other"),
                    site, module,
                    tuple(tuple(t.shape) for t in ins), tuple(str(t.dtype)[6:] for t in ins),
                    max((o.numel() for o in outs), default=-1), flops=_flops_of(rec, func, args, kwargs, out),
                    out_shapes=tuple(tuple(o.shape) for o in outs), start_ns=start, dur_ns=dur, phase=rec.phase())
    tags = []
    if kind == routing.FALLBACK:
        event.d2h = sum(_nbytes(t) for t in ins if t.device.type == device)
        event.h2d = sum(_nbytes(o) for o in outs if o.device.type == device)
    if name == "aten::_local_scalar_dense":
        event.sync, event.d2h = "item", sum(_nbytes(t) for t in ins)
        event.via = library_caller(call.caller, LIBRARY_SYNCS)
    elif dev_in and (name in DATA_DEPENDENT or (name in BOOL_INDEXED and any(
            t.dtype in (torch.bool, torch.uint8) for t in ins[1:]))):
        event.sync = "data_dependent"
    elif name in ("aten::_to_copy", "aten::copy_") and ins:
        src = ins[-1] if name == "aten::copy_" else ins[0]
        dst_dev = (outs[0].device.type if outs else "") if name == "aten::_to_copy" else ins[0].device.type
        if src.device.type == device and dst_dev != device:
            event.sync, event.d2h = "to_cpu", _nbytes(src)
        elif src.device.type != device and dst_dev == device:
            event.h2d = _nbytes(src)
            tags.append("pinned" if src.is_pinned() else "pageable")
            if not kwargs.get("non_blocking", len(args) > 2 and name == "aten::copy_" and bool(args[2])):
                tags.append("blocking")
            lifted = rec._lifted() if rec._lifted is not None else None
            if lifted is not None and lifted is src:
                tags.append("construct")
    elif name == "aten::lift_fresh" and dev_in:
        event.h2d = sum(_nbytes(t) for t in ins)
        tags.append("construct")
    if func.is_view:
        tags.append("view")
    if name in MATMUL_CONV:
        tags.extend(_layout_tags(name, ins))
    if name == "aten::_softmax" and outs:
        rec._softmax_out[id(outs[0])] = outs[0]
    elif name == "aten::log" and ins and rec._softmax_out.get(id(ins[0])) is ins[0]:
        tags.append("log_of_softmax")
    if rec.phase_tracker.in_optimizer:
        tags.append("optimizer")
    if torch._C._current_autograd_node() is not None:
        tags.append("backward")
    else:
        event.inputs = tuple(rec._producer(t) for t in ins)
    if rec._composites:
        tags.append("inner")
    event.tags = tuple(tags)
    rec._add(event, outs)
    return out
