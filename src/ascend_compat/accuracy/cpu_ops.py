"""Route chosen ops to the CPU at run time: the workaround for an NPU kernel that is wrong or fails,
without rebuilding torch_npu.

``ASCEND_COMPAT_CPU_OPS=aten::gelu,aten::mode`` (applied when the shim activates) or::

    from ascend_compat.accuracy import route_to_cpu
    with route_to_cpu(["aten::gelu"]):
        ...

Each named op (an overload, or the op's default overload when none is named) gets a PrivateUse1
kernel - the NPU's - that copies its inputs to the host, runs the op there and copies the results
back to the NPU (in place for in-place and ``out=`` forms). It works the same on real torch_npu and
on the simulated NPU; leaving the context (or :func:`reset`) restores the NPU kernel. Every routed
call counts as a CPU fallback for ``FallbackMonitor`` and ``ascend-compat audit``.

Only ops with a kernel of their own reach a PrivateUse1 kernel: a composite op (``aten::linear``)
runs as its pieces, so route the piece (``aten::addmm``).
"""
from __future__ import annotations

import contextlib
import os
import warnings
from typing import Dict, Iterable, List

__all__ = ["route_to_cpu", "routed_to_cpu", "reset", "apply_from_env", "parse"]

_LIBS: Dict[str, object] = {}  # op name -> torch.library.Library holding its CPU kernel


def parse(text: str) -> List[str]:
    """``"aten::gelu, aten::mode"`` -> ``["aten::gelu", "aten::mode"]``; ValueError naming a bad entry."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    for name in names:
        if "::" not in name:
            raise ValueError(f"ASCEND_COMPAT_CPU_OPS entry {name!r}: name the op with its namespace, e.g. aten::gelu")
    return names


def routed_to_cpu() -> List[str]:
    """The ops currently routed to the CPU."""
    return sorted(_LIBS)


#: ops the routing itself runs to move tensors between the NPU and the host (copies, allocation):
#: routing one of them would call itself without end
_DATA_MOVEMENT = frozenset({"aten::_to_copy", "aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize",
                            "aten::empty", "aten::empty_strided", "aten::resize_", "aten::set_"})


def _overload(name: str):
    import torch

    ns, _, rest = name.partition("::")
    base, _, overload = rest.partition(".")
    if f"{ns}::{base}" in _DATA_MOVEMENT:
        raise ValueError(f"{name!r} cannot be routed to the CPU: the routing itself uses it to move tensors "
                         "between the NPU and the host")
    try:
        return getattr(getattr(getattr(torch.ops, ns), base), overload or "default")
    except AttributeError:
        raise ValueError(f"no operator {name!r} in this torch") from None


def _cpu_kernel(op, name: str):
    import torch
    from torch.utils._pytree import tree_map

    from ascend_compat.observe import routing

    device = torch._C._get_privateuse1_backend_name()
    written = [i for i, a in enumerate(op._schema.arguments) if a.alias_info is not None and a.alias_info.is_write]

    def to_host(x):
        return x.to("cpu") if isinstance(x, torch.Tensor) and x.device.type == device else x

    def kernel(*args, **kwargs):
        routing.note_routed(name)
        home = next((x.device for x in list(args) + list(kwargs.values())
                     if isinstance(x, torch.Tensor) and x.device.type == device), None)
        host_args, host_kwargs = tree_map(to_host, (args, kwargs))
        out = op(*host_args, **host_kwargs)
        for i in written:  # in-place and out= forms: write the host result back into the NPU tensor
            arg = op._schema.arguments[i]
            target = kwargs.get(arg.name) if arg.kwarg_only or i >= len(args) else args[i]
            source = host_kwargs.get(arg.name) if arg.kwarg_only or i >= len(args) else host_args[i]
            if isinstance(target, torch.Tensor) and target is not source:
                if target.shape != source.shape:
                    target.resize_(source.shape)
                target.copy_(source)
        if written:
            first = written[0]
            arg = op._schema.arguments[first]
            return kwargs.get(arg.name) if arg.kwarg_only or first >= len(args) else args[first]
        return tree_map(lambda x: x.to(home) if isinstance(x, torch.Tensor) and home is not None else x, out)

    return kernel


def _add(name: str) -> None:
    import torch

    if name in _LIBS:
        return
    op = _overload(name)
    lib = torch.library.Library(op._schema.name.split("::")[0], "IMPL")
    with warnings.catch_warnings():  # "Overriding a previously registered kernel": that is the point
        warnings.simplefilter("ignore")
        lib.impl(op, _cpu_kernel(op, name), "PrivateUse1")
    _LIBS[name] = lib
    from ascend_compat.observe import routing

    routing.ROUTED_TO_CPU.add(routing.qualified(op))


def _remove(name: str) -> None:
    from ascend_compat.observe import routing

    lib = _LIBS.pop(name)
    routing.ROUTED_TO_CPU.discard(routing.qualified(_overload(name)))
    lib._destroy()


@contextlib.contextmanager
def route_to_cpu(ops: Iterable[str]):
    """Run ``ops`` on the CPU inside the ``with`` block (see the module docstring)."""
    names = [name for name in ops if name not in _LIBS]
    for name in names:
        _overload(name)  # every name checked before anything changes
    for name in names:
        _add(name)
    try:
        yield
    finally:
        for name in names:
            if name in _LIBS:
                _remove(name)


def reset() -> None:
    """Give every routed op its NPU kernel back."""
    for name in list(_LIBS):
        _remove(name)


def apply_from_env() -> List[str]:
    """Route the ops ``ASCEND_COMPAT_CPU_OPS`` names (called when the shim activates)."""
    text = os.environ.get("ASCEND_COMPAT_CPU_OPS", "").strip()
    names = parse(text) if text else []
    for name in names:
        _overload(name)
    for name in names:
        _add(name)
    return names
