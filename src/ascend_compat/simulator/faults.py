"""Opt-in fault injection for the simulated NPU: make an op return a biased result or NaN, or fail
with a CANN error code, to rehearse ``ascend-compat compare`` / ``ascend-compat error`` and to test
workarounds without hardware.

``ASCEND_COMPAT_SIM_FAULTS="aten::gelu=bias:0.05;aten::softmax.int=nan;aten::mm=error:507035"`` (read
at install) or the API::

    from ascend_compat.simulator import faults
    with faults.inject("aten::gelu", "bias", 0.05):
        ...

An op named without an overload means its default overload. Kinds: ``bias:X`` adds X to every
element of the op's floating outputs, ``scale:X`` multiplies them, ``nan`` turns the first element
into NaN, ``error:CODE`` raises ``RuntimeError`` worded as torch_npu reports a failed aclnn call with
that CANN error code. The fault replaces the op's PrivateUse1 kernel (the NPU's), so CPU tensors,
and ops routed to the CPU at run time (``ASCEND_COMPAT_CPU_OPS``), are unaffected; leaving the
context (or :func:`clear`) restores the simulator's kernel.

torch_npu's own ops (``npu::npu_fusion_attention``, ``npu::npu_rms_norm``) take the fault too: the
torch_npu stand-in tells this module (:func:`register_namespace`) which kernel each op has and at
which keys; an op whose kernel runs at ``AutogradPrivateUse1`` (autograd records its CPU reference's
own ops) gets the fault there as well, applied to a copy of each output so its gradient still flows.
"""
from __future__ import annotations

import contextlib
import os
import re
from typing import Callable, Dict, List, Optional, Tuple

__all__ = ["inject", "clear", "active", "parse", "install_from_env", "FaultError", "register_namespace"]

KINDS = ("bias", "scale", "nan", "error")
_ACTIVE: Dict[str, Tuple[str, float, object]] = {}  # op name -> (kind, value, torch.library.Library)
#: namespace -> lookup(overload key) -> (kernel, dispatch keys) or None, for ops the core does not run itself
_NAMESPACES: Dict[str, Callable[[str], Optional[Tuple[Callable, Tuple[str, ...]]]]] = {}


def register_namespace(namespace: str, lookup: Callable[[str], Optional[Tuple[Callable, Tuple[str, ...]]]]) -> None:
    """Called by the torch_npu stand-in when it registers ``torch.ops.npu``: ``lookup("npu_rms_norm")``
    gives the op's kernel and the dispatch keys it is registered at (the core never imports the stand-in)."""
    _NAMESPACES[namespace] = lookup


class FaultError(ValueError):
    """A fault specification that cannot be used (the message says which part and why)."""


def parse(spec: str) -> List[Tuple[str, str, float]]:
    """``"aten::gelu=bias:0.05;aten::mm=error:507035"`` -> ``[(op, kind, value), ...]``."""
    out = []
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        op, sep, what = part.partition("=")
        kind, _, value = what.partition(":")
        if not sep or kind not in KINDS or "::" not in op:
            raise FaultError(f"ASCEND_COMPAT_SIM_FAULTS entry {part!r}: write OP=KIND[:VALUE] with OP like aten::gelu "
                             f"and KIND one of {', '.join(KINDS)}")
        if kind == "nan":
            out.append((op.strip(), kind, 0.0))
            continue
        try:
            number = float(value) if kind != "error" else int(value)
        except ValueError:
            raise FaultError(f"ASCEND_COMPAT_SIM_FAULTS entry {part!r}: {kind} needs a number") from None
        out.append((op.strip(), kind, float(number)))
    return out


def _overload(name: str):
    import torch

    ns, _, rest = name.partition("::")
    base, _, overload = rest.partition(".")
    try:
        return getattr(getattr(getattr(torch.ops, ns), base), overload or "default")
    except AttributeError:
        raise FaultError(f"no operator {name!r} in this torch") from None


def _aclnn(name: str) -> str:
    base = name.split("::", 1)[-1].split(".")[0].strip("_")
    return "aclnn" + "".join(part.capitalize() for part in base.split("_"))


def _faulty_kernel(op, name: str, kind: str, value: float, inner: Callable, autograd: bool = False):
    """``inner`` with the fault applied to its floating outputs: in place, or (``autograd``: the kernel
    autograd records through) on copies, so the outputs' autograd history stays intact."""
    import torch

    from ascend_compat.simulator import _error_code

    def kernel(*args, **kwargs):
        if kind == "error":
            code = int(value)
            raise RuntimeError(
                f"NPU function error: call {_aclnn(name)} failed, error code is {code}"
                + _error_code.cpp_error("PTA", "ACL")
                + f"\n[ERROR] (injected by ASCEND_COMPAT_SIM_FAULTS) {_aclnn(name)} reported error {code}")
        out = inner(*args, **kwargs)
        many = isinstance(out, (tuple, list))
        outs = [t.clone() if autograd and isinstance(t, torch.Tensor) and t.is_floating_point() else t
                for t in (out if many else [out])]
        for t in outs:
            if isinstance(t, torch.Tensor) and t.is_floating_point():
                with torch.no_grad():
                    if kind == "bias":
                        t.add_(value)
                    elif kind == "scale":
                        t.mul_(value)
                    elif t.numel():
                        t.view(-1)[0] = float("nan")
        return type(out)(outs) if many else outs[0]

    kernel.__name__ = f"npu_sim_fault_{re.sub(r'[^0-9a-zA-Z]', '_', name)}"
    return kernel


def _add(name: str, kind: str, value: float) -> None:
    import torch

    from ascend_compat import simulator

    if not simulator.is_installed():
        raise RuntimeError("fault injection needs the simulated NPU installed")
    if name in _ACTIVE:
        _remove(name)
    op = _overload(name)
    namespace = op._schema.name.split("::")[0]
    if namespace in _NAMESPACES:
        base = op._schema.name.split("::")[1]
        found = _NAMESPACES[namespace](base if op._overloadname in ("", "default") else f"{base}.{op._overloadname}")
        if found is None:
            raise FaultError(f"{name} has no kernel on the simulated NPU to inject a fault into")
        inner, keys = found
    else:
        from ascend_compat.simulator import _direct, _dispatch

        inner, keys = _dispatch.direct_kernel(op, _direct.mode_of(op)), ("PrivateUse1",)
    lib = torch.library.Library(namespace, "IMPL")
    import warnings

    with warnings.catch_warnings():  # "Overriding a previously registered kernel": that is the point
        warnings.simplefilter("ignore")
        for key in keys:
            lib.impl(op, _faulty_kernel(op, name, kind, value, inner, key.startswith("Autograd")), key)
    _ACTIVE[name] = (kind, value, lib)


def _remove(name: str) -> None:
    kind, value, lib = _ACTIVE.pop(name)
    lib._destroy()


@contextlib.contextmanager
def inject(op: str, kind: str, value: float = 0.0):
    """Inject one fault for the duration of the ``with`` block."""
    if kind not in KINDS:
        raise FaultError(f"fault kind must be one of {', '.join(KINDS)}, got {kind!r}")
    _add(op, kind, float(value))
    try:
        yield
    finally:
        if op in _ACTIVE:
            _remove(op)


def active() -> Dict[str, Tuple[str, float]]:
    """The injected faults: op name -> (kind, value)."""
    return {name: (kind, value) for name, (kind, value, _) in _ACTIVE.items()}


def clear() -> None:
    """Remove every injected fault (the simulator's own kernels are back)."""
    for name in list(_ACTIVE):
        _remove(name)


def install_from_env() -> int:
    """Inject the faults ``ASCEND_COMPAT_SIM_FAULTS`` names; returns how many (0 when unset)."""
    spec = os.environ.get("ASCEND_COMPAT_SIM_FAULTS", "").strip()
    faults = parse(spec) if spec else []
    for name, kind, value in faults:
        _add(name, kind, value)
    return len(faults)
