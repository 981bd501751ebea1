"""Opt-in fault injection for the simulated NPU: make an op return a biased result or NaN, fail with a
CANN error code, hang, run slowly or kill its process, on one rank from its N-th call on, to rehearse
``ascend-compat compare`` / ``ascend-compat error`` and a cluster job's failures without hardware.

``ASCEND_COMPAT_SIM_FAULTS="aten::gelu=bias:0.05;aten::addmm=error:507015@rank=3@call=40"`` (read at
install) or the API::

    from ascend_compat.simulator import faults
    with faults.inject("aten::gelu", "bias", 0.05):
        ...
    with faults.inject("c10d::allreduce_", "hang", rank=1, call=3):
        ...

An entry is ``OP=KIND[:VALUE][@rank=R][@call=N]``. An op named without an overload means its default
overload. Kinds: ``bias:X`` adds X to every element of the op's floating outputs, ``scale:X`` multiplies
them, ``nan`` turns the first element into NaN, ``error:CODE`` raises ``RuntimeError`` worded as torch_npu
reports a failed aclnn call with that CANN error code (and writes the runtime's plog lines), ``hang``
blocks forever (the process stays alive, as a stuck device task leaves it), ``slow:SECONDS`` sleeps that
long before the op runs, ``kill`` ends the process with SIGKILL, and for collectives ``count:N`` makes
this rank issue the collective with N elements (a wrong-size collective). ``@rank=R`` limits the
fault to global rank R (``RANK``, else the default process group's rank, else 0); ``@call=N`` starts it
at the N-th call of the op on that rank (default 1). Collectives are named by torch's ``c10d`` ops
(``c10d::allreduce_``, ``c10d::broadcast_``, ``c10d::allgather_``, ``c10d::barrier``, ...) and take the
kinds ``error``, ``hang``, ``slow``, ``kill`` and ``count``; the simulated hccl backend applies them
before it runs the collective.

Faults on aten ops replace the op's PrivateUse1 kernel (the NPU's), so CPU tensors, and ops routed to
the CPU at run time (``ASCEND_COMPAT_CPU_OPS``), are unaffected; leaving the context (or :func:`clear`)
restores the simulator's kernel.

torch_npu's own ops (``npu::npu_fusion_attention``, ``npu::npu_rms_norm``) take the fault too: the
torch_npu stand-in tells this module (:func:`register_namespace`) which kernel each op has and at
which keys; an op whose kernel runs at ``AutogradPrivateUse1`` (autograd records its CPU reference's
own ops) gets the fault there as well, applied to a copy of each output so its gradient still flows.
"""
from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

__all__ = ["inject", "clear", "active", "parse", "install_from_env", "FaultError", "Fault", "before_collective",
           "register_namespace"]

KINDS = ("bias", "scale", "nan", "error", "hang", "slow", "kill", "count")
#: kinds without a value, kinds that act on the process (any op), kinds only collectives take
_NO_VALUE = ("nan", "hang", "kill")
_PROCESS = ("error", "hang", "slow", "kill")
_COLLECTIVE_ONLY = ("count",)
_ACTIVE: Dict[str, Tuple["Fault", object]] = {}  # op name -> (fault, torch.library.Library or None)
#: namespace -> lookup(overload key) -> (kernel, dispatch keys) or None, for ops the core does not run itself
_NAMESPACES: Dict[str, Callable[[str], Optional[Tuple[Callable, Tuple[str, ...]]]]] = {}


def register_namespace(namespace: str, lookup: Callable[[str], Optional[Tuple[Callable, Tuple[str, ...]]]]) -> None:
    """Called by the torch_npu stand-in when it registers ``torch.ops.npu``: ``lookup("npu_rms_norm")``
    gives the op's kernel and the dispatch keys it is registered at (the core never imports the stand-in)."""
    _NAMESPACES[namespace] = lookup


class FaultError(ValueError):
    """A fault specification that cannot be used (the message says which part and why)."""


@dataclass(frozen=True)
class Fault:
    """One injected fault: ``op`` (``aten::gelu``, ``c10d::allreduce_``), ``kind``, ``value``, the global
    ``rank`` it is limited to (None: every rank) and the ``call`` it starts at (1: the first)."""

    op: str
    kind: str
    value: float = 0.0
    rank: Optional[int] = None
    call: int = 1

    @property
    def collective(self) -> bool:
        return self.op.startswith("c10d::")


def _entry_error(part: str, why: str) -> FaultError:
    return FaultError(f"ASCEND_COMPAT_SIM_FAULTS entry {part!r}: {why}")


def _qualifiers(part: str, items: List[str]) -> Tuple[Optional[int], int]:
    rank, call = None, 1
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key.strip() not in ("rank", "call") or not value.strip().isdigit():
            raise _entry_error(part, f"'@{item}' is not @rank=R or @call=N (R, N whole numbers)")
        if key.strip() == "rank":
            rank = int(value)
        else:
            call = int(value)
            if call < 1:
                raise _entry_error(part, "@call counts from 1")
    return rank, call


def make(op: str, kind: str, value: float = 0.0, rank: Optional[int] = None, call: int = 1,
         part: Optional[str] = None) -> Fault:
    """A checked :class:`Fault`; FaultError naming ``part`` (the entry's text) when it is not usable."""
    part = part or f"{op}={kind}"
    op = op.strip()
    if "::" not in op:
        raise _entry_error(part, "name the op with its namespace, like aten::gelu or c10d::allreduce_")
    if kind not in KINDS:
        raise _entry_error(part, f"the kind must be one of {', '.join(KINDS)}")
    fault = Fault(op, kind, float(value), rank, int(call))
    if fault.collective and kind not in _PROCESS + _COLLECTIVE_ONLY:
        raise _entry_error(part, f"collectives take the kinds {', '.join(_PROCESS + _COLLECTIVE_ONLY)}")
    if not fault.collective and kind in _COLLECTIVE_ONLY:
        raise _entry_error(part, f"{kind} applies to collectives (c10d::allreduce_, ...)")
    if kind in ("slow", "count") and value < 0:
        raise _entry_error(part, f"{kind} needs a number >= 0")
    return fault


def parse(spec: str) -> List[Fault]:
    """``"aten::gelu=bias:0.05;aten::mm=error:507035@rank=1"`` -> ``[Fault(...), ...]``."""
    out = []
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        head, *quals = part.split("@")
        op, sep, what = head.partition("=")
        kind, _, value = what.strip().partition(":")
        if not sep or kind not in KINDS:
            raise _entry_error(part, f"write OP=KIND[:VALUE][@rank=R][@call=N]; the kind must be one of "
                                     f"{', '.join(KINDS)}")
        rank, call = _qualifiers(part, quals)
        number = 0.0
        if kind not in _NO_VALUE:
            try:
                number = float(int(value) if kind in ("error", "count") else float(value))
            except ValueError:
                raise _entry_error(part, f"{kind} needs a number") from None
        out.append(make(op, kind, number, rank, call, part))
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


def _faulty_kernel(op, fault: Fault, inner: Callable, autograd: bool = False):
    """``inner`` with the fault applied: a process fault (error, hang, slow, kill) before it runs, a value
    fault to its floating outputs: in place, or (``autograd``: the kernel autograd records through) on
    copies, so the outputs' autograd history stays intact."""
    import torch

    from ascend_compat.simulator import _fault_gate

    name, kind, value = fault.op, fault.kind, fault.value

    def kernel(*args, **kwargs):
        if not _fault_gate.due(fault):
            return inner(*args, **kwargs)
        if kind in _PROCESS:
            _fault_gate.act(fault, _aclnn(name))  # error raises, kill does not return, hang never returns
            return inner(*args, **kwargs)
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


def _add(fault: Fault) -> None:
    import torch

    from ascend_compat import simulator

    if not simulator.is_installed():
        raise RuntimeError("fault injection needs the simulated NPU installed")
    if fault.op in _ACTIVE:
        _remove(fault.op)
    op = _overload(fault.op)
    if fault.collective:  # applied by the simulated hccl backend (before_collective)
        _ACTIVE[fault.op] = (fault, None)
        return
    namespace = op._schema.name.split("::")[0]
    if namespace in _NAMESPACES:
        base = op._schema.name.split("::")[1]
        found = _NAMESPACES[namespace](base if op._overloadname in ("", "default") else f"{base}.{op._overloadname}")
        if found is None:
            raise FaultError(f"{fault.op} has no kernel on the simulated NPU to inject a fault into")
        inner, keys = found
    else:
        from ascend_compat.simulator import _direct, _dispatch

        inner, keys = _dispatch.direct_kernel(op, _direct.mode_of(op)), ("PrivateUse1",)
    lib = torch.library.Library(namespace, "IMPL")
    import warnings

    with warnings.catch_warnings():  # "Overriding a previously registered kernel": that is the point
        warnings.simplefilter("ignore")
        for key in keys:
            lib.impl(op, _faulty_kernel(op, fault, inner, key.startswith("Autograd")), key)
    _ACTIVE[fault.op] = (fault, lib)


def _remove(name: str) -> None:
    _fault, lib = _ACTIVE.pop(name)
    if lib is not None:
        lib._destroy()


def before_collective(op: str) -> Optional[int]:
    """Apply the fault injected on collective ``op`` (``c10d::allreduce_``) if it is due on this rank:
    error raises, hang blocks, slow sleeps, kill ends the process; returns the element count a
    ``count`` fault makes this rank issue (None: its own)."""
    entry = _ACTIVE.get(op)
    if entry is None:
        return None
    from ascend_compat.simulator import _fault_gate

    fault = entry[0]
    if not _fault_gate.due(fault):
        return None
    if fault.kind == "count":
        return int(fault.value)
    _fault_gate.act(fault, "Hccl" + _aclnn(op)[len("aclnn"):])
    return None


@contextlib.contextmanager
def inject(op: str, kind: str, value: float = 0.0, rank: Optional[int] = None, call: int = 1):
    """Inject one fault for the duration of the ``with`` block."""
    if kind not in KINDS:
        raise FaultError(f"fault kind must be one of {', '.join(KINDS)}, got {kind!r}")
    fault = make(op, kind, float(value), rank, call)
    _add(fault)
    try:
        yield
    finally:
        if op in _ACTIVE:
            _remove(op)


def active() -> Dict[str, Tuple[str, float]]:
    """The injected faults: op name -> (kind, value)."""
    return {name: (fault.kind, fault.value) for name, (fault, _) in _ACTIVE.items()}


def clear() -> None:
    """Remove every injected fault (the simulator's own kernels are back)."""
    for name in list(_ACTIVE):
        _remove(name)


def install_from_env() -> int:
    """Inject the faults ``ASCEND_COMPAT_SIM_FAULTS`` names; returns how many (0 when unset)."""
    spec = os.environ.get("ASCEND_COMPAT_SIM_FAULTS", "").strip()
    faults = parse(spec) if spec else []
    for fault in faults:
        _add(fault)
    return len(faults)
