"""Mirror every NPU op on the host and judge it by the accuracy standard: is the NPU's result worse than
CUDA's would be?

:func:`compare` returns a :class:`Comparison`, a context manager around a step (or a whole script, which
is what ``ascend-compat compare`` does). It is an op observer (:class:`ascend_compat.observe.OpObserver`):
every op with an NPU tensor argument, forward and backward, runs on the NPU as usual and again on host
copies of its inputs, and each output is judged (:mod:`.assess`: a CUDA stand-in in the same dtypes and
a float64 golden, msprobe's standard per op and dtype, :mod:`.standard`). Each op is judged on the NPU's
own inputs, so errors do not accumulate: the first departing op is where the NPU run starts to differ
(:mod:`.drift` compares whole runs for the drift that builds up across ops).

Three outcomes per compared call: *passed*; *as on Ascend* - the result differs because of what Ascend
does by design (HF32 convolutions and matmuls while torch_npu's switch is on, a float64 computation
torch_npu ran in float32 and that comes back within the standard); a *departure*. Every op call seen is
either compared or counted as not compared with its reason (:data:`.assess.NOT_COMPARED`: views, random
ops, filters, a missing host kernel ...), so ``compared + not compared == seen``.

``npu::`` ops run their CPU reference on the host. The simulated NPU runs most of them as their
reference's own torch ops under autograd, so the op itself never reaches a dispatch hook; those are
compared at the Python level (a ``TorchFunctionMode``) as a whole, besides their pieces. The same mode
sees ``.float()`` / ``.to(x.dtype)`` that the NPU need not run (the tensor is float32 already) on a value
of a float64 segment: where that value comes back.

Backward ops are reported where their forward op was written (``forward_sites``). Cost controls:
``sample=k`` compares every k-th op call; ``ops`` / ``modules`` restrict it (op names such as
``aten::gelu``; module path prefixes such as ``Llama.layers.0``); ``steps=n`` compares the first n steps
only (a step ends at ``Comparison.step()`` or, with ``auto_step``, at each ``optimizer.step()``);
``max_numel`` skips outputs larger than that; ``max_records`` caps how many passed results are kept
(departures and as-on-Ascend results are always kept). Nothing is retained but numbers.

Works on real torch_npu and on the simulated NPU alike.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Dict, Iterable, List, Optional

from ascend_compat.accuracy import assess, hostrun
from ascend_compat.accuracy.float64 import Segments
from ascend_compat.accuracy.results import AS_ON_ASCEND, DEPARTURE, Ledger, OpResult
from ascend_compat.observe.observer import OpCall, OpObserver, device_name

__all__ = ["compare", "compare_model", "Comparison", "OpResult", "unknown_ops"]


def unknown_ops(names: Iterable[str]) -> List[str]:
    """The names in ``names`` (``aten::gelu``, ``aten::add.Tensor``, ``npu::npu_rms_norm``) that name no
    operator of this torch (with the simulator or torch_npu loaded, ``npu::`` ops included)."""
    import torch

    missing = []
    for name in names:
        ns, sep, rest = name.partition("::")
        base, _, overload = rest.partition(".")
        try:
            packet = getattr(getattr(torch.ops, ns), base) if sep and base else None
            ok = packet is not None and (not overload or overload in packet.overloads())
        except (AttributeError, RuntimeError):
            ok = False
        if not ok:
            missing.append(name)
    return missing


def compare(sample: int = 1, ops: Optional[Iterable[str]] = None, modules: Optional[Iterable[str]] = None,
            steps: Optional[int] = None, max_numel: Optional[int] = None, auto_step: bool = False,
            max_records: int = 100_000) -> "Comparison":
    """A :class:`Comparison` (see the module docstring for the options)."""
    return Comparison(sample, ops, modules, steps, max_numel, auto_step, max_records)


def compare_model(model, *inputs, backward: bool = True, **options):
    """Run ``model(*inputs)`` (and a backward of the sum of its floating outputs) under :func:`compare`;
    returns the :class:`~ascend_compat.accuracy.report.AccuracyReport`."""
    import torch

    with compare(**options) as comparison:
        out = model(*inputs)
        if backward:
            outs = [o for o in (out if isinstance(out, (tuple, list)) else [getattr(out, "logits", out)])
                    if isinstance(o, torch.Tensor) and o.is_floating_point() and o.requires_grad]
            if outs:
                sum(o.float().sum() for o in outs).backward()
    return comparison.report()


class _Switches:
    """CUDA's TF32 or torch_npu's HF32 switches, read when asked (a script may flip them mid-run)."""

    def __init__(self, read) -> None:
        self._read = read

    def __getitem__(self, group: str) -> bool:
        return self._read()[group]


class Comparison(OpObserver):
    """The context manager :func:`compare` returns; :meth:`report` gives the findings."""

    def __init__(self, sample=1, ops=None, modules=None, steps=None, max_numel=None, auto_step=False,
                 max_records=100_000):
        if sample < 1:
            raise ValueError(f"sample must be at least 1, got {sample}")
        if steps is not None and steps < 1:
            raise ValueError(f"steps must be at least 1, got {steps}")
        super().__init__(own_thread=True, modules=True, forward_sites=True)
        self.sample = sample
        self.ops = frozenset(ops) if ops else None
        self.modules = tuple(modules) if modules else None
        self.steps, self.max_numel, self.auto_step, self.max_records = steps, max_numel, auto_step, max_records
        self.results: List[OpResult] = []
        self.departures: List[OpResult] = []
        self.as_on_ascend: List[OpResult] = []
        self.compared = 0
        self.seen = 0
        self.step_index = 0
        self.ledger = Ledger()
        self.segments = Segments()
        self.tf32 = _Switches(hostrun.tf32_switches)
        self.hf32 = _Switches(hostrun.hf32_switches)
        self.device = "npu"
        self.modules_seen: set = set()
        self._calls: Dict[str, int] = {}
        self._hooks: List[Any] = []
        self._python = None
        self._pending: List[List[Any]] = []  # npu:: ops running at the Python level: [name, reached dispatch]
        self._host_autocast = None
        self._paused = False

    # ------------------------------------------------------------------ steps
    @property
    def active(self) -> bool:
        return self.steps is None or self.step_index < self.steps

    def step(self) -> None:
        self.step_index += 1
        self.module_stack.clear()

    # ------------------------------------------------------------------ enter / exit
    def __enter__(self) -> "Comparison":
        from torch.optim import optimizer as optim_module

        self.device = device_name()
        if self.auto_step:
            self._hooks.append(optim_module.register_optimizer_step_post_hook(lambda *a, **k: self.step()))
        self.start_observing()
        self._python = _python_level_type()(self)
        self._python.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        python, self._python = self._python, None
        if python is not None:
            python.__exit__(*exc_info)
        self.stop_observing(exc_info)
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()

    def report(self, backend: str = "", strict: bool = False, drift=None, stopped: str = ""):
        """The :class:`~ascend_compat.accuracy.report.AccuracyReport` (``strict``: as-on-Ascend results fail
        it too; ``drift``: a :class:`~ascend_compat.accuracy.drift.DriftReport` to include)."""
        from ascend_compat.accuracy.report import AccuracyReport

        return AccuracyReport(self, backend, strict, drift, stopped)

    # ------------------------------------------------------------------ the op hook
    def watching(self) -> bool:
        return self.active and not self._paused

    @contextlib.contextmanager
    def paused(self):
        """Ops run inside are the comparison's own (copies to the host): not observed."""
        was, self._paused = self._paused, True
        try:
            yield
        finally:
            self._paused = was

    def on_op(self, call: OpCall):
        if not call.tensor_on_device:
            return call.run()
        self.seen += 1
        func, name = call.func, call.name
        if self._pending and self._pending[-1][0] == name:
            self._pending[-1][1] = True  # compared here rather than at the Python level
        if func.is_view:
            self.note(name, assess.NOT_COMPARED["view"])
            return call.run()
        if _random(func, call.args, call.kwargs):
            self.note(name, assess.NOT_COMPARED["random"])
            return call.run()
        module, site = self.origin(call)
        self.modules_seen.add(module)
        if not self.wanted(name, module):
            self.note(name, assess.NOT_COMPARED["filtered"])
            return call.run()
        if self.seen % self.sample:
            self.note(name, assess.NOT_COMPARED["sampling"])
            return call.run()
        function = hostrun.host_function(func)
        if function is None:
            self.note(name, assess.NOT_COMPARED["no_reference"])
            return call.run()
        written = tuple(k for k, _ in hostrun.written_outputs(func, call.args, call.kwargs))
        host = hostrun.HostRun(function, name, call.args, call.kwargs, self.device, written)
        return assess.compare_call(self, name, host, call.args, call.kwargs, call.run, module, site, call.caller)

    # ------------------------------------------------------------------ recording
    def wanted(self, name: str, module: str) -> bool:
        if self.ops is not None and name not in self.ops and name.split(".")[0] not in self.ops:
            return False
        if self.modules is not None and not module.startswith(self.modules):
            return False
        return True

    def note(self, name: str, reason: str) -> None:
        """An op call seen and not compared, and why."""
        self.ledger.note(name, reason)

    def add(self, result: OpResult) -> None:
        """A compared op call (its ``index`` and ``call`` are filled in here)."""
        self.compared += 1
        self._calls[result.name] = self._calls.get(result.name, 0) + 1
        result.index, result.call = self.compared, self._calls[result.name]
        if result.kind == DEPARTURE:
            self.departures.append(result)
        elif result.kind == AS_ON_ASCEND:
            self.as_on_ascend.append(result)
        elif len(self.results) < self.max_records:
            self.results.append(result)

    def host_autocast(self):
        """The NPU's autocast state on the host while a Python-level (``npu::``) op runs there."""
        return self._host_autocast() if self._host_autocast is not None else contextlib.nullcontext()

    # ------------------------------------------------------------------ the Python level
    def on_npu_function(self, func, name: str, args, kwargs):
        """An ``npu::`` op called from Python: compared as a whole unless it reaches the dispatch hook."""
        import torch

        device = self.device
        if not any(isinstance(t, torch.Tensor) and t.device.type == device
                   for t in _flat((args, kwargs))):
            return func(*args, **kwargs)
        resolved = _overload(func)
        function = hostrun.host_function(resolved) if resolved is not None else None
        module = self.module_stack.current()
        pending = [name, False]
        self._pending.append(pending)
        try:
            skip = ("no_reference" if function is None else "random" if _random(resolved, args, kwargs) else
                    "filtered" if not self.wanted(name, module) else None)
            if skip is not None:
                out = func(*args, **kwargs)
                if not pending[1]:
                    self.seen += 1
                    self.note(name, assess.NOT_COMPARED[skip])
                return out
            from ascend_compat.observe.frames import user_frame

            site = user_frame(2)
            with self.paused():
                host = hostrun.HostRun(function, name, args, kwargs, self.device)
            out = func(*args, **kwargs)
            if not pending[1]:
                self.seen += 1
                self.modules_seen.add(module)
                self._host_autocast = _autocast_on_host
                try:
                    with self.paused():
                        assess.compare_call(self, name, host, args, kwargs, lambda: out, module, site)
                finally:
                    self._host_autocast = None
            return out
        finally:
            self._pending.pop()

    def on_no_op_cast(self, tensor, dtype) -> None:
        """``.float()`` / ``.to(dtype)`` returned ``tensor`` itself: a float64 segment's value comes back."""
        shadow = self.segments.drop(tensor)
        if shadow is None:
            return
        from ascend_compat.observe.frames import user_frame

        self.seen += 1
        site = user_frame(3)
        with self.paused():
            verdict = assess.judge_return("aten::_to_copy", tensor, shadow.value)
        kind, verdict, dt, by_design, note = assess._segment_verdict(verdict, str(dtype).replace("torch.", ""), shadow)
        frame = assess.library_frame(None)
        library = frame if frame is not None and (site is None or frame[:2] != site[:2]) else None
        self.add(OpResult(0, "aten::_to_copy", 0, dt, self.module_stack.current(), site, "forward", verdict, kind,
                          by_design, library, note))


def _flat(value):
    from torch.utils._pytree import tree_flatten

    return tree_flatten(value)[0]


def _random(func, args, kwargs) -> bool:
    """The op draws random numbers: torch tags it so, or (torch_npu's ``npu_fusion_attention`` and kin) its
    ``keep_prob`` argument asks for dropout; a ``_grad`` op replays its forward's mask from the ``seed`` and
    ``offset`` it is given, which the host can do too."""
    import torch

    if torch.Tag.nondeterministic_seeded in func.tags:
        return True
    if func._schema.name.endswith("_grad"):
        return False
    for i, arg in enumerate(func._schema.arguments):
        if arg.name == "keep_prob":
            value = kwargs.get("keep_prob", args[i] if i < len(args) and not arg.kwarg_only else arg.default_value)
            return isinstance(value, (int, float)) and value < 1.0
    return False


def _overload(func):
    """The ``OpOverload`` a packet call resolves to (its default overload, or its only one)."""
    import torch

    if isinstance(func, torch._ops.OpOverload):
        return func
    names = func.overloads()
    if "default" in names:
        return func.default
    return getattr(func, names[0]) if len(names) == 1 else None


@contextlib.contextmanager
def _autocast_on_host():
    """CPU autocast as the NPU's is now (for an ``npu::`` reference re-run on the host)."""
    import torch

    device = device_name()
    try:
        enabled = torch.is_autocast_enabled(device)
    except TypeError:  # torch < 2.4: no per-device query
        enabled = False
    if not enabled:
        yield
        return
    with torch.autocast("cpu", dtype=torch.get_autocast_dtype(device)):
        yield


_NO_OP_CASTS = None


def _python_level_type():
    """The ``TorchFunctionMode`` of :meth:`Comparison.on_npu_function` and :meth:`Comparison.on_no_op_cast`."""
    import torch
    from torch.overrides import TorchFunctionMode

    Tensor = torch.Tensor
    casts = {Tensor.float: torch.float32, Tensor.half: torch.float16, Tensor.bfloat16: torch.bfloat16}
    to_like = {Tensor.to, Tensor.type, Tensor.type_as}
    packet, overload = torch._ops.OpOverloadPacket, torch._ops.OpOverload
    get_ident = threading.get_ident

    class _PythonLevel(TorchFunctionMode):
        def __init__(self, comparison: Comparison):
            super().__init__()
            self.c = comparison

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            c = self.c
            if not c.active or get_ident() != c._thread:
                return func(*args, **kwargs)
            if isinstance(func, (packet, overload)):
                name = func._qualified_op_name if isinstance(func, packet) else func._schema.name
                if name.startswith("npu::"):
                    return c.on_npu_function(func, name, args, kwargs)
                return func(*args, **kwargs)
            res = func(*args, **kwargs)
            if c.segments and args and res is args[0] and isinstance(res, Tensor) and (func in casts or func in to_like):
                c.on_no_op_cast(res, res.dtype)
            return res

    return _PythonLevel
