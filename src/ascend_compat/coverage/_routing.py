"""How an aten op would run on torch_npu, and where user code called it (shared by FallbackMonitor and audit).

Routing follows the dispatcher's rules for the PrivateUse1 (``npu``) key, given a predicate saying
whether torch_npu has its own kernel for an overload:

* own kernel -> ``NATIVE``;
* no own kernel but a ``CompositeExplicitAutogradNonFunctional`` (structured ops: ``empty`` + the
  ``out`` overload), ``CompositeExplicitAutograd`` or ``CompositeImplicitAutograd`` kernel ->
  ``COMPOSITE``: that kernel runs on the device and its pieces are dispatched (and judged) in turn;
* otherwise -> ``FALLBACK`` (torch_npu's boxed CPU fallback);
* torch_npu's own ``npu::`` ops are ``NATIVE``; other namespaces are ``OTHER`` (not judged).

:func:`run_composite` runs a composite kernel with a dispatch mode re-entered, so the mode sees the
decomposition exactly as the NPU would execute it (the same kernels torch would pick there).
"""
from __future__ import annotations

import os
import sys
import sysconfig
from typing import Callable, Dict, Optional, Tuple

NATIVE = "native"
COMPOSITE = "composite"
FALLBACK = "cpu_fallback"
OTHER = "other"

_COMPOSITE_KEYS = ("CompositeExplicitAutogradNonFunctional", "CompositeExplicitAutograd",
                   "CompositeImplicitAutograd")


def op_key(op) -> str:
    """``"add.Tensor"`` / ``"relu"`` (default overload bare) for an aten OpOverload, as in the data tables."""
    overload = op._overloadname
    base = op._schema.name.split("::", 1)[-1]
    return base if overload in ("", "default") else f"{base}.{overload}"


def qualified(op) -> str:
    """``"aten::add.Tensor"`` / ``"aten::relu"``: the name torch_npu's fallback warning uses."""
    ns = op._schema.name.split("::", 1)[0]
    return f"{ns}::{op_key(op)}"


def table_predicate(native) -> Callable[[object], bool]:
    """``is_native(op)`` from a set of native overload names (``ascend_compat.data.native_ops``)."""
    return lambda op: op_key(op) in native


def dispatcher_predicate() -> Callable[[object], bool]:
    """``is_native(op)`` asking the dispatcher whether a kernel is registered at PrivateUse1 (real torch_npu)."""
    import torch

    has = torch._C._dispatch_has_kernel_for_dispatch_key
    return lambda op: has(op._schema.name + ("." + op._overloadname if op._overloadname not in ("", "default")
                                             else ""), "PrivateUse1")


#: ``aten::name.overload`` of the ops routed to the CPU at run time (``ASCEND_COMPAT_CPU_OPS``; the
#: accuracy tools keep it): they count as CPU fallbacks whatever kernel the NPU has
ROUTED_TO_CPU: set = set()


def note_routed(name: str) -> None:
    """Called by a routed op's kernel on every call: the simulator's fallback listeners hear of it
    (``FallbackMonitor``'s events method); the dispatch method judges it by :data:`ROUTED_TO_CPU`."""
    simulator = sys.modules.get("ascend_compat.simulator")
    if simulator is not None and simulator.is_installed():
        from ascend_compat.simulator import events

        events.notify(name)


class Router:
    """Caches the route of each OpOverload: ``(kind, composite DispatchKey or None)``."""

    def __init__(self, is_native: Callable[[object], bool]):
        self._is_native = is_native
        self._cache: Dict[object, Tuple[str, Optional[object]]] = {}

    def route(self, op) -> Tuple[str, Optional[object]]:
        if ROUTED_TO_CPU and qualified(op) in ROUTED_TO_CPU:
            return FALLBACK, None
        found = self._cache.get(op)
        if found is None:
            found = self._cache[op] = self._route(op)
        return found

    def _route(self, op):
        import torch

        ns = op._schema.name.split("::", 1)[0]
        if ns == "npu":
            return NATIVE, None
        if ns != "aten":
            return OTHER, None
        if self._is_native(op):
            return NATIVE, None
        name = qualified(op)
        for key in _COMPOSITE_KEYS:
            if torch._C._dispatch_has_kernel_for_dispatch_key(name, key):
                return COMPOSITE, getattr(torch._C.DispatchKey, key)
        return FALLBACK, None


def run_composite(mode, op, key, args, kwargs):
    """Run ``op``'s composite kernel ``key`` with ``mode`` active again, so its pieces reach the mode.

    Some composite kernels call their own op again below the Python key (``detach``); ``mode`` must
    keep a ``decomposing`` list and run such a re-entrant call directly (see :func:`reentrant`).
    """
    stack = mode.decomposing
    stack.append(op)
    try:
        with mode:
            return op._op_dk(key, *args, **kwargs)
    finally:
        stack.pop()


def reentrant(mode, op) -> bool:
    """True when ``op`` is the op whose composite kernel ``mode`` is running right now."""
    stack = mode.decomposing
    return bool(stack) and stack[-1] is op


# ---------------------------------------------------------------- user frames

def _skip_dirs() -> Tuple[str, ...]:
    import torch

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # ascend_compat/
    # the standard library where it really is: in a virtual environment sysconfig's "stdlib" is the
    # environment's lib/pythonX.Y, which holds site-packages and so every library
    dirs = {os.path.dirname(torch.__file__), package, os.path.dirname(os.__file__),
            os.path.dirname(sysconfig.__file__)}
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs)


_SKIP: Optional[Tuple[str, ...]] = None
_skip_cache: Dict[str, bool] = {}


def user_frame(start: int = 1) -> Optional[Tuple[str, int, str]]:
    """``(file, line, function)`` of the innermost caller outside torch, ascend_compat and the stdlib
    (None if every frame is inside them). Cheap enough for the first call of an op, not for every call."""
    global _SKIP
    if _SKIP is None:
        _SKIP = _skip_dirs()
    frame = sys._getframe(start)
    cache = _skip_cache
    while frame is not None:
        fname = frame.f_code.co_filename
        skip = cache.get(fname)
        if skip is None:
            if fname.startswith("<"):  # "<frozen runpy>" is stdlib; "<string>", "<stdin>" are user code
                skip = fname.startswith("<frozen")
            else:
                skip = os.path.realpath(fname).startswith(_SKIP)
            cache[fname] = skip
        if not skip:
            return fname, frame.f_lineno, frame.f_code.co_name
        frame = frame.f_back
    return None
