"""``FallbackMonitor``: count the ops that fall back to the CPU while code runs.

::

    with FallbackMonitor() as monitor:
        train_step()
    print(monitor.report.summary())   # "2 CPU fallback(s): aten::mode (47 calls), aten::poisson (3 calls)"

It observes dispatch, not warnings (torch_npu warns once per op; the monitor counts every call):

* on the simulated NPU (``method="events"``, chosen automatically): the simulator's fallback
  listener (``ascend_compat.simulator.events``) reports every call that reaches its emulated
  torch_npu CPU fallback; calls from every thread are counted;
* on real torch_npu (``method="dispatch"``, chosen automatically when ``torch_npu`` is loaded and
  the simulator is not): a ``TorchDispatchMode`` routes each op on an ``npu`` tensor the way the
  dispatcher does (see :mod:`ascend_compat.coverage._routing`): an op with a PrivateUse1 kernel is native; one with
  a composite kernel runs that kernel with the mode still active, so its pieces are judged; anything
  else is a CPU fallback. Dispatch modes are thread-local: only the thread that entered the monitor
  is observed (autograd's backward threads inherit it). Ops on CPU tensors pass straight through,
  and every op still runs the kernel the dispatcher would have picked, so results are unchanged.
  ``method="dispatch"`` under the simulator judges by the emulated version's native-op table (the
  simulator's own kernels are registered differently from torch_npu's).
* without any NPU backend (``method="none"``) nothing can fall back; the report is empty.

Each op's record has its call count and the first user stack frame (outside torch, ascend_compat
and the standard library) of its first call. Monitors may be nested (each counts what runs inside
it), re-entered, or used as a decorator; ``raise_on_fallback=True`` raises :class:`CPUFallbackError`
at the first fallback instead of letting it run. Enter and exit a monitor in the same thread.
"""
from __future__ import annotations

import functools
import sys
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from ascend_compat._files import display_path

__all__ = ["FallbackMonitor", "FallbackReport", "FallbackRecord", "Frame", "CPUFallbackError"]

_METHODS = ("auto", "events", "dispatch", "none")


class CPUFallbackError(RuntimeError):
    """Raised by a monitor with ``raise_on_fallback=True`` when an op would run on the CPU."""


class Frame(NamedTuple):
    """A user stack frame: ``file``, ``line``, ``function``."""

    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{display_path(self.file)}:{self.line} in {self.function}"


@dataclass(frozen=True)
class FallbackRecord:
    """One op that fell back: ``name`` (``"aten::mode"``), ``calls``, ``first_frame`` (or None)."""

    name: str
    calls: int
    first_frame: Optional[Frame]

    def to_dict(self) -> Dict[str, Any]:
        frame = self.first_frame._asdict() if self.first_frame is not None else None
        return {"name": self.name, "calls": self.calls, "first_frame": frame}


@dataclass(frozen=True)
class FallbackReport:
    """A snapshot of a monitor's counts; ``ops`` sorted by calls (most first), then first seen."""

    ops: Tuple[FallbackRecord, ...]
    method: str

    @property
    def total_calls(self) -> int:
        return sum(r.calls for r in self.ops)

    def __len__(self) -> int:
        return len(self.ops)

    def __getitem__(self, name: str) -> FallbackRecord:
        """The record of op ``name`` (``"aten::mode"`` or ``"mode"``); KeyError if it did not fall back."""
        for r in self.ops:
            if r.name == name or r.name == "aten::" + name:
                return r
        raise KeyError(name)

    def summary(self) -> str:
        """``"2 CPU fallback(s): aten::mode (47 calls), aten::poisson (3 calls)"`` or ``"no CPU fallbacks"``."""
        if not self.ops:
            return "no CPU fallbacks"
        parts = [f"{r.name} ({r.calls} call{'' if r.calls == 1 else 's'})" for r in self.ops]
        return f"{len(self.ops)} CPU fallback(s): " + ", ".join(parts)

    def text(self) -> str:
        """The summary followed by one line per op with where it was first called."""
        lines = [self.summary()]
        for r in self.ops:
            lines.append(f"  {r.name}: {r.calls} call(s), first at {r.first_frame or 'an unknown place'}")
        return "\n".join(lines)

    __str__ = summary

    def to_dict(self) -> Dict[str, Any]:
        return {"method": self.method, "total_calls": self.total_calls, "summary": self.summary(),
                "ops": [r.to_dict() for r in self.ops]}


class FallbackMonitor:
    """Context manager (and decorator) counting CPU fallbacks per op; see the module docstring.

    Args:
        method: ``"auto"`` (default), ``"events"`` (simulator listener), ``"dispatch"``
            (TorchDispatchMode) or ``"none"``.
        raise_on_fallback: raise :class:`CPUFallbackError` at the first fallback (the op does not
            run on the dispatch method; on the simulator it is counted and the error replaces its result).
    """

    def __init__(self, method: str = "auto", raise_on_fallback: bool = False):
        if method not in _METHODS:
            raise ValueError(f"FallbackMonitor method must be one of {', '.join(_METHODS)}, got {method!r}")
        self._requested = method
        self.raise_on_fallback = raise_on_fallback
        self._lock = threading.Lock()
        self._counts: Dict[str, List[Any]] = {}  # name -> [calls, first frame]
        self._depth = 0
        self._method: Optional[str] = None
        self._mode = None
        self._listener = None

    # ------------------------------------------------------------ results

    @property
    def report(self) -> FallbackReport:
        """A snapshot of the counts so far (also valid while the monitor is active)."""
        with self._lock:
            items = [(name, calls, frame, i) for i, (name, (calls, frame)) in enumerate(self._counts.items())]
        items.sort(key=lambda t: (-t[1], t[3]))
        return FallbackReport(tuple(FallbackRecord(n, c, f) for n, c, f, _ in items), self._method or "none")

    @property
    def method(self) -> Optional[str]:
        """The observation method in use (decided on first entry), or None before."""
        return self._method

    def reset(self) -> None:
        """Forget the counts so far."""
        with self._lock:
            self._counts.clear()

    def _hit(self, name: str) -> None:
        with self._lock:
            entry = self._counts.get(name)
            if entry is not None:
                entry[0] += 1
        if entry is None:
            from ascend_compat.coverage._routing import user_frame

            found = user_frame(2)
            frame = Frame(*found) if found is not None else None
            with self._lock:
                entry = self._counts.setdefault(name, [0, frame])
                entry[0] += 1
        if self.raise_on_fallback:
            first = self._counts[name][1]
            raise CPUFallbackError(
                f"the operator '{name}' has no NPU kernel and would run on the CPU"
                + (f" (first called at {first})" if first is not None else "")
                + "; FallbackMonitor(raise_on_fallback=True) stops here. Look for a rewrite with "
                "`ascend-compat audit`, or drop raise_on_fallback to let it run on the CPU.")

    # ------------------------------------------------------------ activation

    def _choose(self) -> str:
        simulated = False
        sim = sys.modules.get("ascend_compat.simulator")
        if sim is not None and sim.is_installed():
            simulated = True
        if self._requested != "auto":
            if self._requested == "events" and not simulated:
                raise RuntimeError("FallbackMonitor(method='events') needs the simulated NPU installed "
                                   "(ascend_compat.simulator.install()); use method='auto' elsewhere")
            return self._requested
        if simulated:
            return "events"
        if "torch_npu" in sys.modules:
            return "dispatch"
        return "none"

    def _start(self) -> None:
        method = self._choose()
        if method == "events":
            from ascend_compat.simulator import events

            self._listener = self._hit
            events.add_fallback_listener(self._listener)
        elif method == "dispatch":
            self._mode = _make_mode(self)
            self._mode.__enter__()
        self._method = method

    def _stop(self, exc_info) -> None:
        if self._listener is not None:
            from ascend_compat.simulator import events

            events.remove_fallback_listener(self._listener)
            self._listener = None
        if self._mode is not None:
            mode, self._mode = self._mode, None
            mode.__exit__(*exc_info)

    def __enter__(self) -> "FallbackMonitor":
        if self._depth == 0:
            self._start()
        self._depth += 1
        return self

    def __exit__(self, *exc_info) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._stop(exc_info)

    def __call__(self, fn):
        """Use as a decorator: every call of ``fn`` runs inside this monitor (counts accumulate)."""
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


def _make_mode(monitor: FallbackMonitor):
    """The TorchDispatchMode of the dispatch method (torch imported only here)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from ascend_compat.coverage import _routing

    sim = sys.modules.get("ascend_compat.simulator")
    if sim is not None and sim.is_installed():
        from ascend_compat.simulator import _fallback

        router = _routing.Router(_routing.table_predicate(_fallback.native_set()))
    else:
        router = _routing.Router(_routing.dispatcher_predicate())
    device = torch._C._get_privateuse1_backend_name()
    Tensor = torch.Tensor
    FALLBACK, COMPOSITE = _routing.FALLBACK, _routing.COMPOSITE

    def on_device(args, kwargs) -> bool:
        for a in args:
            if isinstance(a, Tensor):
                if a.device.type == device:
                    return True
            elif isinstance(a, (list, tuple)):
                for e in a:
                    if isinstance(e, Tensor) and e.device.type == device:
                        return True
        for v in kwargs.values():
            if isinstance(v, Tensor):
                if v.device.type == device:
                    return True
            elif isinstance(v, torch.device) and v.type == device:
                return True
            elif isinstance(v, (list, tuple)):
                for e in v:
                    if isinstance(e, Tensor) and e.device.type == device:
                        return True
        return False

    class _FallbackMode(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.decomposing = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if on_device(args, kwargs) and not _routing.reentrant(self, func):
                kind, key = router.route(func)
                if kind == FALLBACK:
                    monitor._hit(_routing.qualified(func))
                elif kind == COMPOSITE:
                    return _routing.run_composite(self, func, key, args, kwargs)
            return func(*args, **kwargs)

    return _FallbackMode()
