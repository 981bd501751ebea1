"""Direct PrivateUse1 registrations of the generic kernel (performance and correctness).

Structured ops reach an unknown backend as ``empty()`` + ``op.out()`` through their
``CompositeExplicitAutogradNonFunctional`` kernel (two trips into Python); ``_foreach_*`` ops
reach it through a composite that loops per tensor. Registering the generic kernel directly for
those overloads makes each one trip. ``CompositeExplicitAutograd`` ops that the emulated torch_npu
implements natively also get one, as torch_npu's kernel shadows the composite; so do the
``CompositeImplicitAutograd`` ops it implements natively with a recorded dtype gap (``isclose``:
``_dtype_support.shadows_composite``), so the gap is seen rather than decomposed away. The special
ops whose composite kernels would shadow the fallback (docs/simulator_pitfalls.md, pitfall 2) are
registered here too. View ops the emulated torch_npu implements natively get their CPU kernel
redispatched on the device tensors, as a C-level callable (no Python frame).

Dispatch modes: torch's Python kernel holder re-enters Python through a per-op registration table
whenever a ``TorchDispatchMode`` is on the stack while a backend kernel runs (nested modes, or C++
paths such as ``torch.tensor(data, device=...)`` that exclude the Python key). A *fallback* has no
entry there, so every op reaching the simulator's boxed fallback then died with ``INTERNAL ASSERT
func != nullptr``. :func:`register_fallback_ops` therefore registers the same generic kernel per op
for every aten op that would reach the fallback (no PrivateUse1 or composite kernel), which changes
no semantics (it is what the fallback runs). It is called at the first dispatch-mode push
(``_patches``), not at install, so that until then the dispatcher shows exactly what torch_npu
shows: a PrivateUse1 kernel only for the ops it registers (tools read native coverage from it).
"""
from __future__ import annotations

import functools

import torch

from ascend_compat.simulator import _dispatch, _dtype_support, _plan, _quantized_ops, _special_ops

_has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
_CPU_KS = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)


_NEVER_DIRECT = frozenset({"copy_", "_copy_from", "_copy_from_and_resize", "_to_copy", "to", "lift_fresh"})


def _native_composite(op) -> bool:
    """True for a ``CompositeExplicitAutograd`` op torch_npu (emulated version) implements natively.

    torch_npu's own kernel shadows the composite, so the op runs as one unit (no decomposition,
    e.g. no float64 accumulation buffers on the device). Ops with a Device argument (whose
    outputs may live elsewhere) and view ops keep torch's behaviour.
    """
    schema = op._schema
    if any("Device" in str(a.type) for a in schema.arguments):
        return False
    if any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns):
        return False
    return torch.Tag.inplace_view not in op.tags


def _native_view(op, key: str, native) -> bool:
    """True for a view op (``_plan.is_view_op``, not a special op) that the emulated torch_npu
    implements natively.

    Such an op only rewrites metadata, so its CPU kernel applied to the device tensors themselves
    is the whole kernel (``_dispatch``'s "view" path); registering that as a C-level callable
    saves the Python frames of the boxed fallback on every ``.t()``, ``.view()``, ``expand``.
    """
    return key in native and _plan.special_kernel(op) is None and _plan.is_view_op(op)


def _overloads(native=frozenset(), fallback_ops: bool = False):
    """Yield ``(OpOverload, fallback_mode)`` for every aten overload that should get a direct kernel.

    ``fallback_mode`` tells how torch_npu would reach the op (see ``_fallback.fallback_name``):
    "structured" (through the ``out`` overload), "composite" (a ``_foreach_*`` op torch_npu lacks
    decomposes into per-tensor ops: never a fallback itself) or "plain". With ``fallback_ops``,
    yield instead the ops that would reach the boxed fallback (see :func:`register_fallback_ops`).
    """
    for qualname in torch._C._dispatch_get_all_op_names():
        if not qualname.startswith("aten::"):
            continue
        name, _, overload = qualname[len("aten::"):].partition(".")
        if _has_kernel(qualname, "PrivateUse1"):
            continue
        # structured functional/in-place forms: a CompositeExplicitAutogradNonFunctional kernel
        # plus a CPU kernel. NonFunctional kernels without a CPU kernel (select_backward, *_copy)
        # are plain decompositions and stay that way, as on torch_npu.
        structured = (_has_kernel(qualname, "CompositeExplicitAutogradNonFunctional")
                      and _has_kernel(qualname, "CPU"))
        explicit = _has_kernel(qualname, "CompositeExplicitAutograd")
        foreach = name.startswith("_foreach_") and explicit
        key = name if not overload or overload == "default" else f"{name}.{overload}"
        native_explicit = explicit and key in native and name not in _NEVER_DIRECT
        view_candidate = (not fallback_ops and not explicit and key in native
                          and _has_kernel(qualname, "CPU"))
        implicit_gap = (not fallback_ops and key in native and _dtype_support.shadows_composite(key)
                        and _has_kernel(qualname, "CompositeImplicitAutograd"))
        if fallback_ops:
            if (structured or explicit or _has_kernel(qualname, "CompositeImplicitAutograd")
                    or _has_kernel(qualname, "CompositeExplicitAutogradNonFunctional")):
                continue
        elif not (structured or foreach or native_explicit or view_candidate or implicit_gap):
            continue
        packet = getattr(torch.ops.aten, name, None)
        if packet is None:
            continue
        try:
            op = getattr(packet, overload or "default")
        except AttributeError:
            continue
        if fallback_ops or implicit_gap:
            yield op, "plain"
            continue
        if view_candidate and not (structured or foreach or native_explicit):
            if _native_view(op, key, native):
                yield op, "view"
            continue
        if native_explicit and not (structured or foreach) and not _native_composite(op):
            continue
        yield op, ("structured" if structured else "composite" if foreach and key not in native else "plain")


def mode_of(op) -> str:
    """How torch_npu reaches ``op`` (the ``fallback_mode`` of :func:`_overloads`): "structured",
    "composite" (a ``_foreach_*`` op) or "plain" - for code that puts its own kernel over ours."""
    qualname = op._schema.name + ("" if op._overloadname in ("", "default") else "." + op._overloadname)
    if _has_kernel(qualname, "CompositeExplicitAutogradNonFunctional") and _has_kernel(qualname, "CPU"):
        return "structured"
    if op._schema.name.startswith("aten::_foreach_") and _has_kernel(qualname, "CompositeExplicitAutograd"):
        return "composite"
    return "plain"


def register(lib: torch.library.Library, native=frozenset()) -> int:
    """Register direct kernels on ``lib`` (an ``aten`` IMPL library); return how many.

    ``native``: the emulated torch_npu version's native-op names (empty: no table).
    """
    count = 0
    for qualname, fn in _special_ops.DIRECT_ALLOCATION.items():
        name, _, overload = qualname.partition(".")
        lib.impl(getattr(getattr(torch.ops.aten, name), overload or "default"), functools.partial(fn, None),
                 "PrivateUse1")
        count += 1
    count += _quantized_ops.register(lib)
    if "normal_" in native:  # randn's second step (torch_npu registers normal_ natively)
        lib.impl(torch.ops.aten.normal_.default, _dispatch.normal_kernel, "PrivateUse1")
        count += 1
    for name in _special_ops.DIRECT:
        packet = getattr(torch.ops.aten, name)
        for overload in packet.overloads():
            op = getattr(packet, overload)
            lib.impl(op, _dispatch.direct_kernel(op), "PrivateUse1")
            count += 1
    for op, mode in _overloads(native):
        if mode == "view":
            kernel = functools.partial(op._handle.redispatch_boxed, _CPU_KS)
        else:
            kernel = _dispatch.direct_kernel(op, mode)
        lib.impl(op, kernel, "PrivateUse1")
        count += 1
    return count


_fallback_lib = None


def register_fallback_ops() -> int:
    """Register the generic kernel per op for every aten op that would reach the boxed fallback
    (once per process; returns how many were registered by this call). See the module docstring."""
    global _fallback_lib
    if _fallback_lib is not None:
        return 0
    from ascend_compat import simulator

    lib = torch.library.Library("aten", "IMPL")
    count = 0
    for op, mode in list(_overloads(fallback_ops=True)):
        lib.impl(op, _dispatch.direct_kernel(op, mode), "PrivateUse1")
        count += 1
    simulator._libraries.append(lib)  # registrations live as long as their Library object
    _fallback_lib = lib
    return count
