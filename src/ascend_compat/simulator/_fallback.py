"""Simulated torch_npu CPU fallback: warn (once per op) or refuse, from real native-op tables.

torch_npu sends an aten op that has no NPU kernel to its boxed CPU fallback, which warns once per
op with the text in :data:`WARNING` (on stderr, as torch_npu prints it: :mod:`._warn`) and raises instead when ``TORCH_NPU_FALLBACK_CPU_DISABLE=1``.
Which ops are native comes from ``ascend_compat.data.native_ops(version)`` (generated from
torch_npu wheels). Ops that reach the backend only through a composite decomposition never get
here, so they are not fallbacks, as on hardware.

Structured ops (``add.Tensor``, ``add_.Tensor``) reach torch_npu through their ``out`` overload
when the functional form has no NPU kernel; the fallback is then reported for the ``out``
overload, as torch_npu reports ``aten::fmax.out``.
"""
from __future__ import annotations

import os
from typing import FrozenSet, Optional, Set

from ascend_compat.simulator import _warn, events

WARNING = ("CAUTION: The operator '{op}' is not currently supported on the NPU backend and will "
           "fall back to run on the CPU. This may have performance implications.")

_native: Optional[FrozenSet[str]] = None
_warned: Set[str] = set()


_listeners: list = []


def on_table_change(fn) -> None:
    """Call ``fn()`` after every :func:`init` (the dispatcher forgets its op plans: they say which
    ops fall back)."""
    _listeners.append(fn)


def init(table_version: Optional[str]) -> None:
    """Load the native-op set of ``table_version`` (None: no table, fallbacks are not simulated)."""
    global _native
    if table_version is None:
        _native = None
    else:
        from ascend_compat import data

        _native = frozenset(data.native_ops(table_version))
    for fn in _listeners:
        fn()


def native_set() -> FrozenSet[str]:
    """The loaded native-op names (empty when no table is loaded)."""
    return _native or frozenset()


def active() -> bool:
    """True when a native-op table is loaded."""
    return _native is not None


def _key(name: str, overload: str) -> str:
    return name if overload in ("", "default") else f"{name}.{overload}"


def fallback_name(op, mode: str = "plain") -> Optional[str]:
    """The ``aten::name.overload`` torch_npu would report as a CPU fallback for ``op``, or None if native.

    ``mode``: "plain" (the op itself reaches the backend); "structured" (functional/in-place
    form of a structured op: without its own NPU kernel it reaches torch_npu as its ``out``
    overload, which decides); "composite" (torch_npu would run torch's decomposition: never a
    fallback itself).
    """
    if _native is None or mode == "composite":
        return None
    structured = mode == "structured"
    schema = op._schema
    full = schema.name  # "aten::add"
    if not full.startswith("aten::"):
        return None
    name = full[len("aten::"):]
    overload = schema.overload_name
    if _key(name, overload) in _native:
        return None
    if structured:
        base = name[:-1] if name.endswith("_") and not name.endswith("__") else name
        import torch

        packet = getattr(torch.ops.aten, base, None)
        candidates = [f"{overload}_out", "out"] if overload not in ("", "default") else ["out"]
        for cand in candidates:
            if packet is not None and cand in packet.overloads():
                if _key(base, cand) in _native:
                    return None
                return f"aten::{base}.{cand}"
    return f"aten::{_key(name, overload)}"


def _error_suffix() -> str:
    from ascend_compat.simulator import _error_code

    return _error_code.cpp_error("OPS", "NOT_SUPPORT")


def hit(op_name: str) -> None:
    """Record one fallback call of ``op_name``: refuse, or warn the first time; notify listeners."""
    if os.environ.get("TORCH_NPU_FALLBACK_CPU_DISABLE", "") == "1":
        raise RuntimeError(
            f"The operator '{op_name}' would execute its main computation on CPU through dispatcher "
            "backend fallback, but CPU fallback is disabled by TORCH_NPU_FALLBACK_CPU_DISABLE=1."
            + _error_suffix()
        )
    if op_name not in _warned:
        _warned.add(op_name)
        _warn.npu_warn(WARNING.format(op=op_name), "npu_cpu_fallback",
                       "torch_npu/csrc/aten/VariableFallbackKernel.cpp:231")
    events.notify(op_name)
