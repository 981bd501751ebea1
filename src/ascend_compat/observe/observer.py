"""The op hook every watching tool shares: :class:`OpObserver` and the :class:`OpCall` it hands on.

An observer, entered as a context manager, installs one ``TorchDispatchMode`` in the entering thread
(autograd's backward, started there, is seen too). For every op that reaches the mode it:

1. lets the op through untouched when :meth:`OpObserver.watching` says no (cheap, per op), when the
   observer watches its own thread only and another thread runs the op, or when the op is the one
   whose composite kernel is being run (some composites call themselves again below the Python key);
2. routes the op as the dispatcher would on torch_npu (:mod:`.routing`) when the observer has a
   ``router`` and the op touches the NPU (or always, with ``route_everything``: ``audit`` runs the
   script on the CPU and judges every op as if it ran on the NPU). A composite op that returns tensors
   is announced to :meth:`OpObserver.on_composite` and then runs as its pieces, each of which comes back
   here (an op returning only metadata runs as it would have: :func:`.routing.computes`);
3. hands the op to :meth:`OpObserver.on_op` as an :class:`OpCall`, which must run it
   (:meth:`OpCall.run`) and return its result, or return ``NotImplemented`` to let a tensor subclass
   (DTensor) dispatch it first (its pieces come back here).

The hook sits above any ``TorchDispatchMode`` active when the observer is entered (``plan`` enters one
inside ``FakeTensorMode``: the observer sees each op first, and ``OpCall.run`` runs it fake).

Where an op comes from is the observer's too: :meth:`OpObserver.origin` gives the ``nn.Module`` path
(with ``modules=True``, :mod:`.modules`) and the user's source line (:mod:`.frames`), and
:meth:`OpObserver.phase` the part of the script running (``train``, ``eval``, ``checkpoint``,
``setup``: with ``phases=`` the starting phase, :mod:`.phases`). With
``forward_sites=True`` a ``TorchFunctionMode`` tags each autograd node created while watching with the
module and line of the call that created it, and a backward op takes the tags of the node the
autograd engine is running, so backward ops are placed at their forward line; without it they are
placed where the backward runs (the ``loss.backward()`` line). :meth:`OpObserver.module_path` is the
module alone (per op, no stack walk); :func:`in_backward` says whether the autograd engine is running.

Subclasses: ``coverage.fallback.FallbackMonitor`` (CPU fallbacks), ``coverage.audit.OpRecorder``
(coverage per torch_npu version), ``perf.record.Recorder`` (performance), ``accuracy.mirror.Comparison``
(numerics), ``plan._record.Recorder`` (allocations and op costs of a plan). Every op still runs the kernel it would have run, so results are unchanged.
"""
from __future__ import annotations

import functools
import sys
import threading
from typing import Any, Dict, Iterator, Optional, Tuple

from ascend_compat.observe import routing
from ascend_compat.observe.frames import user_frame
from ascend_compat.observe.modules import ModuleStack
from ascend_compat.observe.phases import PhaseTracker

__all__ = ["OpObserver", "OpCall", "device_name", "in_backward"]

#: ``grad_fn.metadata`` key of an autograd node's origin: ``(module path, user frame)``
ORIGIN = "ascend_compat.observe.origin"

_NAMES: Dict[object, str] = {}


def device_name() -> str:
    """The NPU backend's device type (``"npu"``): torch's PrivateUse1 name in this process."""
    import torch

    return torch._C._get_privateuse1_backend_name()


class OpCall:
    """One op as it reaches the observer: ``func`` (an ``OpOverload``), ``args``, ``kwargs`` and
    ``kind``, its route on the NPU (``routing.NATIVE`` / ``FALLBACK`` / ``OTHER`` when not routed)."""

    __slots__ = ("func", "args", "kwargs", "kind", "caller", "_device", "_dev")

    def __init__(self, func, args, kwargs, device: str, caller=None) -> None:
        self.func, self.args, self.kwargs = func, args, kwargs
        self.kind = routing.OTHER
        self.caller = caller  # the frame that dispatched the op (user frames are searched from it)
        self._device = device
        self._dev: Optional[Tuple[bool, bool]] = None

    @property
    def name(self) -> str:
        """``"aten::add.Tensor"``, ``"npu::npu_rms_norm"``."""
        name = _NAMES.get(self.func)
        if name is None:
            name = _NAMES[self.func] = routing.qualified(self.func)
        return name

    def run(self):
        """Run the op (the kernel the dispatcher picks) and return its result."""
        return self.func(*self.args, **self.kwargs)

    def tensors(self) -> Iterator[Any]:
        """The tensor arguments (lists of tensors one level deep), in order: positional, then keyword."""
        import torch

        Tensor = torch.Tensor
        for a in (*self.args, *self.kwargs.values()):
            if isinstance(a, Tensor):
                yield a
            elif isinstance(a, (list, tuple)):
                for e in a:
                    if isinstance(e, Tensor):
                        yield e

    def _scan(self) -> Tuple[bool, bool]:
        if self._dev is None:
            self._dev = _scan(self.args, self._device) or _scan(self.kwargs.values(), self._device) or (False, False)
            if self._dev == (False, True):  # a device argument: an NPU tensor may still follow in the keywords
                tensor = _scan(self.kwargs.values(), self._device)
                self._dev = (bool(tensor and tensor[0]), True)
        return self._dev

    @property
    def tensor_on_device(self) -> bool:
        """An NPU tensor is among the arguments."""
        return self._scan()[0]

    @property
    def on_device(self) -> bool:
        """The op runs on the NPU: an NPU tensor argument, or an NPU ``device=`` (a factory)."""
        tensor, named = self._scan()
        return tensor or named


def _scan(values, device: str) -> Optional[Tuple[bool, bool]]:
    """``(True, named)`` at the first NPU tensor among ``values``, ``(False, True)`` for an NPU device
    argument (after the whole scan), None when neither is there."""
    named = False
    for a in values:
        if isinstance(a, _TENSOR[0]):
            if a.device.type == device:
                return True, named
        elif isinstance(a, (list, tuple)):
            for e in a:
                if isinstance(e, _TENSOR[0]) and e.device.type == device:
                    return True, named
        elif isinstance(a, _TENSOR[1]) and a.type == device:
            named = True
    return (False, True) if named else None


_TENSOR: list = []  # [torch.Tensor, torch.device], filled when the first mode is made


class OpObserver:
    """Base class of the tools that watch every op (see the module docstring).

    Args:
        router: a :class:`~ascend_compat.observe.routing.Router`, or None not to route ops.
        route_everything: route every op, not only those that touch the NPU.
        own_thread: watch only the thread that entered the observer.
        modules: keep the ``nn.Module`` path of the running code (:attr:`module_stack`).
        forward_sites: place backward ops at the forward call that created their autograd node.
        phases: follow the script's phase (:attr:`phase_tracker`), starting in this one (``"setup"``
            around a whole script, ``"train"`` around a training loop); None not to.
        on_optimizer_step: with ``phases``, called after each outermost ``optimizer.step()``.
    """

    def __init__(self, router: Optional[routing.Router] = None, route_everything: bool = False,
                 own_thread: bool = False, modules: bool = False, forward_sites: bool = False,
                 phases: Optional[str] = None, on_optimizer_step=None) -> None:
        self.router = router
        self.route_everything = route_everything
        self.own_thread = own_thread
        self.module_stack: Optional[ModuleStack] = ModuleStack() if modules else None
        self.phase_tracker: Optional[PhaseTracker] = (PhaseTracker(phases, on_optimizer_step)
                                                      if phases is not None else None)
        self.forward_sites = forward_sites
        self._thread: Optional[int] = None
        self._mode = None
        self._tagger = None

    # ------------------------------------------------------------------ for subclasses
    def watching(self) -> bool:
        """Whether ops are observed right now (called for every op: keep it cheap)."""
        return True

    def on_composite(self, call: OpCall):
        """A routed op about to run as its composite kernel's pieces (each then observed in turn). A
        value other than None is handed to :meth:`after_composite` with the composite's result."""

    def after_composite(self, token, out) -> None:
        """The composite op ``on_composite`` returned ``token`` for has run and returned ``out``."""

    def on_op(self, call: OpCall):
        """Observe ``call``: run it (:meth:`OpCall.run`) and return its result."""
        return call.run()

    # ------------------------------------------------------------------ attribution
    def origin(self, call: Optional[OpCall] = None) -> Tuple[str, Optional[Tuple[str, int, str]]]:
        """``(module path, (file, line, function))`` of the running op: its forward call's for a
        backward op when ``forward_sites`` is on and its node was tagged, else the module running now
        (``""`` without ``modules``) and the innermost user frame (None when there is none)."""
        if self.forward_sites:
            node = _current_node()
            if node is not None:
                where = node.metadata.get(ORIGIN)
                if where is not None:
                    return where
        return ((self.module_stack.current() if self.module_stack is not None else ""),
                user_frame(call.caller if call is not None and call.caller is not None else 2))

    def module_path(self) -> str:
        """The ``nn.Module`` path of the running op, as :meth:`origin` gives it, without looking for the
        source line (cheap enough for every op)."""
        if self.forward_sites:
            node = _current_node()
            if node is not None:
                where = node.metadata.get(ORIGIN)
                if where is not None:
                    return where[0]
        return self.module_stack.current() if self.module_stack is not None else ""

    def phase(self) -> str:
        """The phase of the running op (``"train"`` when phases are not followed)."""
        return self.phase_tracker.current() if self.phase_tracker is not None else "train"

    @property
    def observing(self) -> bool:
        """True between entering and leaving."""
        return self._mode is not None

    # ------------------------------------------------------------------ enter / exit
    def start_observing(self) -> None:
        """Install the hook in this thread (and the module hooks, and the node tagger)."""
        if self._mode is not None:
            raise RuntimeError(f"this {type(self).__name__} is already observing")
        self._thread = threading.get_ident()
        if self.module_stack is not None:
            self.module_stack.install()
        if self.phase_tracker is not None:
            self.phase_tracker.install()
        if self.forward_sites:
            self._tagger = _tagger_type()(self)
            self._tagger.__enter__()
        self._mode = _mode_type()(self)
        self._mode.__enter__()

    def stop_observing(self, exc_info=(None, None, None)) -> None:
        """Remove what :meth:`start_observing` installed (in the reverse order)."""
        mode, self._mode = self._mode, None
        if mode is not None:
            mode.__exit__(*exc_info)
        tagger, self._tagger = self._tagger, None
        if tagger is not None:
            tagger.__exit__(*exc_info)
        if self.module_stack is not None:
            self.module_stack.remove()
        if self.phase_tracker is not None:
            self.phase_tracker.remove()

    def __enter__(self):
        self.start_observing()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop_observing(exc_info)


def _current_node():
    import torch

    return torch._C._current_autograd_node()


def in_backward() -> bool:
    """True while the autograd engine runs a backward pass in this thread (its nodes, hooks and
    callbacks: the engine's graph task), whichever thread started it."""
    import torch

    return torch._C._current_graph_task_id() != -1


@functools.lru_cache(maxsize=None)
def _mode_type():
    """The ``TorchDispatchMode`` class (made on first use: torch is imported only here)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    import torch

    if not _TENSOR:
        _TENSOR.extend((torch.Tensor, torch.device))
    COMPOSITE = routing.COMPOSITE
    get_ident = threading.get_ident
    _getframe = sys._getframe

    class _ObserverMode(TorchDispatchMode):
        def __init__(self, observer: OpObserver):
            super().__init__()
            self.observer = observer
            self.device = device_name()
            self.decomposing: list = []  # ops whose composite kernel runs now (routing.run_composite)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            obs = self.observer
            if ((self.decomposing and self.decomposing[-1] is func) or not obs.watching()
                    or (obs.own_thread and get_ident() != obs._thread)):
                return func(*args, **kwargs)
            call = OpCall(func, args, kwargs, self.device, _getframe(1))
            router = obs.router
            if router is not None and (obs.route_everything or call.on_device):
                kind, key = router.route(func)
                call.kind = kind
                if kind == COMPOSITE and routing.computes(func):
                    token = obs.on_composite(call)
                    out = routing.run_composite(self, func, key, args, kwargs)
                    if token is not None:
                        obs.after_composite(token, out)
                    return out
            return obs.on_op(call)

    return _ObserverMode


@functools.lru_cache(maxsize=None)
def _tagger_type():
    """The ``TorchFunctionMode`` tagging new autograd nodes with their origin (``forward_sites``)."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._pytree import tree_flatten

    Tensor = torch.Tensor
    get_ident = threading.get_ident

    class _Tagger(TorchFunctionMode):
        def __init__(self, observer: OpObserver):
            super().__init__()
            self.observer = observer

        def __torch_function__(self, func, types, args=(), kwargs=None):
            res = func(*args, **(kwargs or {}))
            obs = self.observer
            if not obs.watching() or not torch.is_grad_enabled() or get_ident() != obs._thread:
                return res
            where = None
            for t in tree_flatten(res)[0]:
                node = t.grad_fn if isinstance(t, Tensor) else None
                if node is not None and ORIGIN not in node.metadata:
                    if where is None:
                        where = ((obs.module_stack.current() if obs.module_stack is not None else ""), user_frame(2))
                    _tag_graph(node, where)
            return res

    return _Tagger


def _tag_graph(node, where) -> None:
    """Tag ``node`` and the untagged nodes behind it: the ones the same call made inside its kernel (an
    autocast cast, the ``mm`` under a ``linear``, a transposed weight), whose backward ops belong to that
    call too. The walk stops at nodes already tagged (made by earlier calls); a parameter's
    ``AccumulateGrad`` takes the call that used it first."""
    stack = [node]
    while stack:
        n = stack.pop()
        meta = n.metadata
        if ORIGIN in meta:
            continue
        meta[ORIGIN] = where
        for nxt, _ in n.next_functions:
            if nxt is not None:
                stack.append(nxt)
