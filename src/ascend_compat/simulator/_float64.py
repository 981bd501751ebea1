"""float64 on the simulated NPU, as torch_npu does it, plus opt-in reporting modes.

What torch_npu 2.14 does (its ``ToKernelNpu.cpp`` and the shipped ``libtorch_npu.so``):

* float64 and complex128 tensors exist on the device: factories with ``dtype=torch.float64``,
  ``cpu_double.to("npu")`` and ``x.to("npu", torch.float64)`` give float64 npu tensors, and the
  aclnn kernels that list DT_DOUBLE compute in float64; the ops torch_npu records refusing float64
  raise its errors (``_dtype_support``, with its other recorded dtype gaps).
* ``_to_copy`` of an npu tensor asked for float64 by *dtype alone* (no device, no layout:
  ``x.double()``, ``x.to(torch.float64)``, ``x.type(torch.float64)``) from another dtype returns
  **float32** and prints once ``Device do not support double dtype now, dtype cast replace with
  float.`` (:func:`to_copy_dtype`, :data:`DOWNCAST_MESSAGE`).

Modes (``install(float64=...)`` / ``ASCEND_COMPAT_SIM_FLOAT64``, or ``simulator.policy()``):

* ``"torch_npu"`` (default): exactly the above;
* ``"warn"``: the same, plus a ``UserWarning`` at every float64/complex128 npu allocation and every
  downcast (reports each float64 use without failing);
* ``"strict"``: every float64/complex128 npu allocation and every downcast raises ``TypeError``
  (for code that must be float64-free on the device);
* ``"allow"``: float64 everywhere, no downcast (a numerical reference, not the hardware).
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Optional

import torch

from ascend_compat.knowledge import operators
from ascend_compat.simulator import _memory, _state

MODES = ("torch_npu", "warn", "strict", "allow")
DEFAULT_MODE = "torch_npu"
#: torch_npu's one-time message (ToKernelNpu.cpp, TORCH_NPU_WARN_ONCE), verbatim.
DOWNCAST_MESSAGE = operators.float64_downcast_message()
WIDE = (torch.float64, torch.complex128)

_mode = DEFAULT_MODE
_override: Optional[str] = None
_downcast_warned = False
_CPU_KS = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
_redispatch_to_copy = torch.ops.aten._to_copy.default._handle.redispatch_boxed


def init(mode: str) -> None:
    """Set the installed mode (called once by ``install``)."""
    global _mode
    _mode = mode
    _memory.wide_allocation_check = check_allocation


def mode() -> str:
    """The mode in force (a :func:`override` wins over the installed one)."""
    return _override or _mode


@contextlib.contextmanager
def override(new_mode: str):
    """Temporarily use another mode (process-wide; meant for tests)."""
    global _override
    old = _override
    _override = new_mode
    try:
        yield
    finally:
        _override = old


def to_copy_dtype(self_dtype: torch.dtype, dtype: Optional[torch.dtype], layout=None,
                  device=None) -> Optional[torch.dtype]:
    """The dtype torch_npu's ``_to_copy`` really produces for an npu tensor of ``self_dtype``.

    float32 when float64 is asked for by dtype alone (no ``layout``, no ``device``) from another
    dtype; otherwise ``dtype`` unchanged (the rule: ``knowledge.operators.downcasts_to_float32``).
    Pure: no message, no mode (see :func:`to_copy`).
    """
    if dtype is torch.float64 and operators.downcasts_to_float32(
            str(self_dtype)[6:], "float64", layout is not None, device is not None):
        return torch.float32
    return dtype


def _report_downcast(self_dtype: torch.dtype) -> None:
    global _downcast_warned
    current = mode()
    if current == "strict":
        raise TypeError(
            f"{self_dtype} -> float64 on the NPU: torch_npu returns float32 here ({DOWNCAST_MESSAGE}) "
            "(the simulator's float64 mode is 'strict'). Keep the tensor float32 on the device, or move "
            "it to the CPU first (x.cpu().double()).")
    if current == "warn":
        warnings.warn(f"{self_dtype} -> float64 on the simulated NPU returns float32, as torch_npu does "
                      "(float64 mode 'warn')", UserWarning, stacklevel=3)
    elif not _downcast_warned:
        _downcast_warned = True
        from ascend_compat.simulator import _warn

        _warn.npu_warn(DOWNCAST_MESSAGE, "NPUNativeFunctions::_to_copy",
                       "torch_npu/csrc/aten/ops/ToKernelNpu.cpp")


def to_copy(self, **kwargs):
    """PrivateUse1 kernel of ``aten::_to_copy``: torch_npu's float64 rule, then the copy.

    Runs on every conversion of an npu tensor (``.cpu()``, ``.half()``, ``.to("npu:1")``), so the
    plain cases copy host to host directly (``_memory``; a non-blocking copy to the CPU gets a
    pinned output, as on torch_npu); ``pin_memory=``, non-strided and quantized cases go to
    torch's composite kernel.
    """
    dtype = kwargs.get("dtype")
    device = kwargs.get("device")
    if dtype is torch.float64 and (_override or _mode) != "allow":
        new = to_copy_dtype(self.dtype, dtype, kwargs.get("layout"), device)
        if new is not dtype:
            _report_downcast(self.dtype)
            kwargs["dtype"] = dtype = new
    if (kwargs.get("pin_memory") or self.is_quantized
            or kwargs.get("layout") not in (None, torch.strided) or self.layout is not torch.strided):
        return _redispatch_to_copy(_CPU_KS, self, **kwargs)
    target = device.type if device is not None else "npu"
    if target not in ("cpu", "npu"):
        return _redispatch_to_copy(_CPU_KS, self, **kwargs)
    fmt = kwargs.get("memory_format") or torch.preserve_format
    source = self if self.is_cpu else _memory.host_for(self, False)  # x.to("npu") of a host tensor
    out = source.to(dtype=dtype or self.dtype, memory_format=fmt, copy=True)
    if target == "cpu":
        # torch_npu's _to_copy gives a non-blocking npu->cpu copy a pinned output (ToKernelNpu.cpp)
        return out.pin_memory() if kwargs.get("non_blocking") else out
    index = self.device.index if device is None else _state.check_index(device)
    return _memory.adopt(out, index)


def register(lib: torch.library.Library) -> None:
    """Register :func:`to_copy` for npu tensors on ``lib`` (an ``aten`` IMPL library)."""
    lib.impl(torch.ops.aten._to_copy.default, to_copy, "PrivateUse1")


def check_allocation(dtype: torch.dtype, numel: int) -> None:
    """Called by the memory funnel for every float64/complex128 npu allocation: reports it in the
    ``"warn"`` and ``"strict"`` modes, nothing otherwise."""
    current = _override or _mode
    if current == "torch_npu" or current == "allow":
        return
    name = "float64" if dtype == torch.float64 else "complex128"
    if current == "warn":
        warnings.warn(f"{name} tensor of {numel} element(s) created on the simulated NPU (float64 mode 'warn'; "
                      "real NPUs allocate it, but many aclnn kernels reject DT_DOUBLE)", UserWarning, stacklevel=4)
        return
    raise TypeError(
        f"{name} tensor created on the NPU while the simulator's float64 mode is 'strict' (every float64 "
        "use is reported). Convert to float32 before moving to npu (e.g. .float()), or use the default "
        "mode 'torch_npu' (install(float64='torch_npu') / ASCEND_COMPAT_SIM_FLOAT64=torch_npu).")
