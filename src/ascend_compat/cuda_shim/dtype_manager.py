"""What happens to float64 on the NPU (Ascend computes float64 only in some kernels).

``apply_dtype_policy(DTypePolicy.WARN)`` chooses one of:

* ``OFF`` (default): nothing is changed; float64 reaches the backend as written, and the backend
  (real torch_npu, or the simulated NPU, which follows it) decides: factories and ``.to("npu")``
  moves give float64 npu tensors, a dtype-only cast of an npu tensor (``x.double()``,
  ``x.to(torch.float64)``) gives float32 with torch_npu's one-time message, and an op whose aclnn
  kernel lacks DT_DOUBLE fails with torch_npu's error naming the kernel;
* ``WARN``: float64 requested *on the device* becomes float32, with one warning per call site;
* ``SILENT``: the same, without the warning;
* ``ERROR``: float64 requested on the device raises ``TypeError`` naming the call and the fix.

"On the device" means: a factory call with ``dtype=torch.float64`` and an NPU (or translated CUDA)
device, ``Tensor.to``/``Module.to`` towards the NPU with float64, ``.cuda()``/``.to("cuda")`` of a
float64 tensor, and the legacy ``torch.cuda.DoubleTensor``. CPU float64 is never touched.
The policy is process-wide and read on each call, so it can be changed at any time.
"""
from __future__ import annotations

import enum
import threading
import warnings
from typing import Any

__all__ = ["DTypePolicy", "apply_dtype_policy", "current_policy", "device_dtype"]


class DTypePolicy(enum.Enum):
    """float64 handling on the NPU; see the module docstring."""

    OFF = "off"
    WARN = "warn"
    SILENT = "silent"
    ERROR = "error"


_POLICY = DTypePolicy.OFF
_LOCK = threading.Lock()
_WARNED: set = set()
#: called with no arguments after every policy change (child-process inheritance listens here)
ON_CHANGE: list = []


def apply_dtype_policy(policy: DTypePolicy | str) -> DTypePolicy:
    """Set the float64 policy; returns the previous one. Accepts the enum or its name/value."""
    global _POLICY
    if isinstance(policy, str):
        try:
            policy = DTypePolicy[policy.upper()]
        except KeyError:
            names = ", ".join(p.name for p in DTypePolicy)
            raise ValueError(f"unknown dtype policy {policy!r}; choose one of {names}") from None
    if not isinstance(policy, DTypePolicy):
        raise TypeError(f"apply_dtype_policy() takes a DTypePolicy, got {type(policy).__name__}")
    with _LOCK:
        previous, _POLICY = _POLICY, policy
    for listener in tuple(ON_CHANGE):
        listener()
    return previous


def current_policy() -> DTypePolicy:
    return _POLICY


def active() -> bool:
    """Cheap check used on hot paths: is any conversion policy on?"""
    return _POLICY is not DTypePolicy.OFF


def device_dtype(dtype: Any, what: str) -> Any:
    """The dtype to use on the device for a requested ``dtype`` under the current policy."""
    import torch

    if _POLICY is DTypePolicy.OFF:
        return dtype
    if dtype is torch.float64:
        return _convert(dtype, torch.float32, what)
    if dtype is torch.complex128:
        return _convert(dtype, torch.complex64, what)
    return dtype


def _convert(dtype: Any, to: Any, what: str) -> Any:
    if _POLICY is DTypePolicy.ERROR:
        raise TypeError(
            f"{what}: {dtype} is not supported on the Ascend NPU (DTypePolicy.ERROR). "
            f"Use {to} on the device, or choose DTypePolicy.WARN to convert automatically."
        )
    from ascend_compat.cuda_shim import registry

    registry.hit("dtype.float64", what)
    if _POLICY is DTypePolicy.WARN:
        key = (what, _caller())
        if key not in _WARNED:
            _WARNED.add(key)
            warnings.warn(
                f"ascend-compat: {what} asked for {dtype} on the NPU; using {to} (DTypePolicy.WARN)",
                RuntimeWarning,
                stacklevel=4,
            )
    return to


def _caller() -> tuple[str, int]:
    from ascend_compat.cuda_shim.registry import _user_site

    return _user_site()
