"""``torch.ops.npu``: torch_npu's custom ``npu::`` ops, with torch_npu's real schemas, on the simulated NPU.

:func:`register` (called once by the simulator's ``install()``) defines every op of the emulated
torch_npu version in a ``torch.library`` ``npu`` namespace with the schema torch_npu registers
(``ascend_compat.data.npu_op_schemas``, generated from a torch_npu wheel by
``tools/gen_npu_op_schemas.py``), and registers one kernel per overload:

* ops with a CPU reference (:data:`REFERENCES`, the ``fused`` modules) run it for the ``PrivateUse1``
  key and for ``AutogradPrivateUse1`` (so autograd records the reference's own torch ops: the
  references are differentiable where torch_npu's ops are) and, where the reference is shape-only
  safe, for ``Meta``; ops with an explicit backward formula (``_derivatives.FORMULAS``, from
  torch_npu's derivatives.yaml) get that through ``torch.library.register_autograd`` instead, and
  grad ops (``_derivatives.NOT_DIFFERENTIABLE``) no autograd kernel;
* every other op raises :class:`NotSimulatedError` naming the op when *called*.

Only ``PrivateUse1``/``Meta`` kernels exist, as in torch_npu, so a CPU tensor gets torch's own
"Could not run 'npu::x' with arguments from the 'CPU' backend" NotImplementedError. Ops without a
tensor argument (``empty_with_format``...) are registered for ``CompositeExplicitAutograd`` as
torch_npu does. The stand-in binds each op as ``torch_npu.<op>`` (the ``OpOverloadPacket``), as
torch_npu's ``_export_npu_ops`` does, so ``hasattr(torch_npu, op)`` is True for every op of the
emulated version, simulated or not: feature checks pass, and the call says what is missing. As there,
``torch.<op>`` raises torch_npu's "deprecated ... use torch_npu.<op>" error. Every op is looked up once
at registration, so ``dir(torch.ops.npu)`` lists the whole registry, as after torch_npu's import.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, FrozenSet, List, Optional

import torch

from ascend_compat.simulator.torch_npu import _derivatives
from ascend_compat.simulator.torch_npu import fused as _fused
from ascend_compat.simulator.torch_npu.fused import _errors

__all__ = ["NotSimulatedError", "REFERENCES", "register", "op_names", "simulated", "schema_of"]


class NotSimulatedError(NotImplementedError):
    """A torch_npu custom op that the simulated NPU has no CPU reference for was called."""


#: op overload (``"npu_format_cast.Tensor"``, default overload bare) -> CPU reference
REFERENCES: Dict[str, Callable] = dict(_fused.OVERLOADS)

#: references that also serve as Meta kernels (output shapes from input shapes alone)
_META_SAFE = _fused.META_SAFE

_registered: Optional[FrozenSet[str]] = None
#: overload -> (its kernel, the dispatch keys it is registered at), for the ops with a CPU reference
_KERNELS: Dict[str, tuple] = {}


def _table() -> Dict[str, dict]:
    from ascend_compat import data

    return data.npu_op_schemas()


def _wanted(version: Optional[str]) -> List[str]:
    """Overloads of the emulated version: the schema table (torch_npu 2.14's schemas) filtered by that
    version's op names; ops an older version has and 2.14 dropped have no schema and are left out."""
    from ascend_compat import data

    names = data.custom_ops(version)
    return sorted(k for k in _table() if k.split(".")[0] in names)


def schema_of(overload: str) -> str:
    """torch_npu's schema string of ``overload`` (KeyError if the table has none)."""
    return _table()[overload]["schema"]


def _not_simulated(overload: str) -> Callable:
    base = overload.split(".")[0]

    def kernel(*args: Any, **kwargs: Any):
        raise NotSimulatedError(
            f"torch_npu.{base} is not simulated by ascend-compat: the simulated NPU has no CPU reference "
            f"for npu::{overload} ({schema_of(overload)}). It runs on real Ascend hardware only; the "
            f"simulated ones are listed by ascend_compat.simulator.torch_npu._op_registry.simulated()."
            + _errors.ops_error("NOT_SUPPORT"))

    kernel.__name__ = base
    return kernel


def _returns_tuple(schema: torch._C.FunctionSchema) -> bool:
    return len(schema.returns) > 1


def _kernel(reference: Callable, schema: torch._C.FunctionSchema) -> Callable:
    as_tuple = _returns_tuple(schema)
    as_list = len(schema.returns) == 1 and str(schema.returns[0].type) == "List[Tensor]"

    @functools.wraps(reference)
    def kernel(*args: Any, **kwargs: Any):
        out = reference(*args, **kwargs)
        if as_tuple:
            return tuple(out)
        if as_list:
            return list(out)
        return out

    return kernel


def register(version: Optional[str] = None) -> torch.library.Library:
    """Define the ``npu`` namespace's ops and kernels; return the Library (keep it alive). Once per process."""
    global _registered
    if _registered is not None:
        raise RuntimeError("torch.ops.npu is already registered in this process")
    lib = torch.library.Library("npu", "DEF")
    names = set()
    for overload in _wanted(version):
        row = _table()[overload]
        lib.define(row["schema"])
        schema = torch._C.parse_schema(row["schema"])
        reference = REFERENCES.get(overload)
        has_tensor = any("Tensor" in str(a.type) for a in schema.arguments)
        if reference is None:
            kernel = _not_simulated(overload)
            keys = ["PrivateUse1"] if has_tensor else ["CompositeExplicitAutograd"]
        else:
            kernel = _kernel(reference, schema)
            explicit = overload in _derivatives.FORMULAS or overload in _derivatives.NOT_DIFFERENTIABLE
            autograd = [] if explicit else ["AutogradPrivateUse1"]
            keys = (["PrivateUse1"] + autograd + (["Meta"] if overload in _META_SAFE else [])
                    if has_tensor else ["CompositeExplicitAutograd"])
        for key in keys:
            lib.impl(overload, kernel, key)
        if reference is not None and has_tensor:
            _KERNELS[overload] = (kernel, tuple(k for k in keys if k != "Meta"))
        if reference is not None and overload in _derivatives.FORMULAS:
            setup, backward = _derivatives.FORMULAS[overload]
            torch.library.register_autograd(f"npu::{overload}", backward, setup_context=setup, lib=lib)
        names.add(overload.split(".")[0])
    _registered = frozenset(names)
    _export_deprecated_torch_names(names)
    _bind_packets(names)
    from ascend_compat.simulator import faults

    faults.register_namespace("npu", _KERNELS.get)  # fault injection reaches these kernels
    return lib


def _bind_packets(names) -> None:
    """Look every op up once, as torch_npu's ``utils/custom_ops.py`` does at import (``torch_npu.<op> =
    torch.ops.npu.<op>`` for each op): torch creates an op's ``OpOverloadPacket`` on first lookup, and
    only then does ``dir(torch.ops.npu)``/``list(torch.ops.npu)`` list it. About 20 ms for 398 ops."""
    namespace = torch.ops.npu
    for name in sorted(names):
        getattr(namespace, name)


def _export_deprecated_torch_names(names) -> None:
    """torch_npu's ``_export_npu_ops`` also binds ``torch.<op>`` to a function raising "torch.<op> is
    deprecated ... Use torch_npu.<op> instead." (never over a name torch itself has)."""
    from ascend_compat.simulator._error_code import pta_error

    for name in names:
        if hasattr(torch, name):
            continue

        def deprecated(*args: Any, _name: str = name, **kwargs: Any):
            raise RuntimeError(f"torch.{_name} is deprecated and will be removed in future version. "
                               f"Use torch_npu.{_name} instead." + pta_error("NOT_SUPPORT"))

        deprecated.__name__ = name
        setattr(torch, name, deprecated)


def op_names() -> FrozenSet[str]:
    """Names of the ops registered in ``torch.ops.npu`` (empty before :func:`register`)."""
    return _registered or frozenset()


def simulated() -> FrozenSet[str]:
    """Registered op names with a CPU reference (every overload of the name or some of them)."""
    return frozenset(n for n in op_names() if any(k.split(".")[0] == n for k in REFERENCES))
