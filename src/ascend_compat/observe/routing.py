"""How an op would run on torch_npu: the routing rule every watching tool applies (one place).

Routing follows the dispatcher's rules for the PrivateUse1 (``npu``) key, given a predicate saying
whether torch_npu has its own kernel for an overload:

* own kernel -> ``NATIVE``;
* no own kernel but a ``CompositeExplicitAutogradNonFunctional`` (structured ops: ``empty`` + the
  ``out`` overload), ``CompositeExplicitAutograd`` or ``CompositeImplicitAutograd`` kernel
  (:func:`ascend_compat.data.composite_kernel`, which ``data.would_fall_back`` applies too) ->
  ``COMPOSITE``: that kernel runs on the device and its pieces are dispatched (and judged) in turn;
* otherwise -> ``FALLBACK`` (torch_npu's boxed CPU fallback);
* torch_npu's own ``npu::`` ops are ``NATIVE``; other namespaces are ``OTHER`` (not judged).

:func:`run_composite` runs a composite kernel with a dispatch mode re-entered, so the mode sees the
decomposition exactly as the NPU would execute it (the same kernels torch would pick there).
"""
from __future__ import annotations

import sys
from typing import Callable, Dict, Optional, Tuple

from ascend_compat.data import composite_kernel

NATIVE = "native"
COMPOSITE = "composite"
FALLBACK = "cpu_fallback"
OTHER = "other"


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


def backend_router() -> "Router":
    """The router of the NPU backend in this process: the emulated version's native-op table under the
    simulated NPU (its own kernels are registered differently from torch_npu's), else the dispatcher's
    own PrivateUse1 registrations (real torch_npu)."""
    sim = sys.modules.get("ascend_compat.simulator")
    if sim is not None and sim.is_installed():
        from ascend_compat.simulator import _fallback

        return Router(table_predicate(_fallback.native_set()))
    return Router(dispatcher_predicate())


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
        key = composite_kernel(qualified(op))
        if key is not None:
            return COMPOSITE, getattr(torch._C.DispatchKey, key)
        return FALLBACK, None


_computes: Dict[object, bool] = {}


def computes(op) -> bool:
    """True when ``op`` returns tensors. Ops that return only metadata (``_has_compatible_shallow_copy_type``,
    ``is_same_size``) are never run as their composite by an observer: the backend's answer is the one
    the script acts on (torch_npu registers its own ``_has_compatible_shallow_copy_type`` for host/device
    pairs, outside its op tables; the composite's False unties shared parameters in ``Module.to``)."""
    found = _computes.get(op)
    if found is None:
        found = _computes[op] = any("Tensor" in str(r.type) for r in op._schema.returns)
    return found


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
