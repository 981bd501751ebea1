"""The single place that registers the device guard and the backend hooks and answers "current
device" / "device count".

Backend hooks: the C++ hooks of :mod:`ascend_compat.simulator._cext` when they can be had (they
give torch the pinned host allocator behind ``pin_memory=True`` factories, ``Tensor.pin_memory()``
and non-blocking npu->cpu copies, as torch_npu's hooks do); otherwise torch's Python hooks, and
pinned memory is emulated at the Python level only (``pin_memory()``/``is_pinned()``; ``pin_memory=True``
factories then raise torch's "implement getPinnedMemoryAllocator" error). :func:`pinned_memory_reason`
says which.

Two implementations, chosen once at install:

* the C++ guard from :mod:`ascend_compat.simulator._cext` (``load_guard(num_devices)``), used
  whenever it can be had (its library is loaded at every install, for the backend hooks). It tells
  C++ (autograd engine, DeviceGuard) the real device count and current device, so backward on
  ``npu:1`` works, and answers guard queries without calling into Python.
* the Python guard (``torch._C._acc.DeviceGuard`` subclass), only when the C++ one cannot be had.
  torch's Python guard interface only lets us report the device *type*; C++ then believes there
  is exactly one device. Good for ``devices == 1``; the current device is tracked per thread here.

The requested device count is honoured only when it works: when the C++ guard cannot be had (no C++
compiler, no ninja for the first build, a failed build), the simulator offers **one** device and
emits a :class:`SimulatedDeviceCountWarning` saying why and how to fix it. (Keeping N devices with
the Python guard was rejected: forward would run on ``npu:1`` and backward would then die with an
INTERNAL ASSERT deep in the autograd engine; with one device, ``npu:1`` fails at once with
"Invalid device ID" and the warning explains it.)
"""
from __future__ import annotations

import threading
import warnings
from typing import Optional

import torch

_local = threading.local()
_device_count = 1
_cxx = None  # object with current_device() / set_device(i) / device_count(), or None
_cxx_hooks = None  # the C++ module whose backend hooks are registered, or None


class SimulatedDeviceCountWarning(UserWarning):
    """Fewer simulated devices than requested are offered (the multi-device guard is unavailable)."""


class PythonDeviceGuard(torch._C._acc.DeviceGuard):
    """Reports the PrivateUse1 device type to C++ (all torch's Python guard interface allows)."""

    def type_(self):
        return torch._C._autograd.DeviceType.PrivateUse1


class PrivateUse1Hooks(torch._C._acc.PrivateUse1Hooks):
    """The backend hooks torch queries: the simulated NPU is built and available."""

    def is_available(self) -> bool:
        return True

    def has_primary_context(self, dev_id) -> bool:
        return True

    def is_built(self) -> bool:
        return True


def choose(num_devices: int):
    """Pick the guard for ``num_devices``; return the Python guard object to register with torch.

    Returns None when the C++ guard took over registration itself.
    """
    global _device_count, _cxx, _cxx_hooks
    from ascend_compat.simulator import _cext

    _device_count = num_devices
    _cxx_hooks = _cext.load_hooks()
    # the C++ guard whenever its library loads, one device included: torch's Python guard costs
    # a Python call per guard query (about 7 % of a small MLP step, bench_simulator.py)
    if num_devices > 1 or _cxx_hooks is not None:
        _cxx = _cext.load_guard(num_devices)
        if _cxx is None and num_devices > 1:
            # Without the C++ guard, autograd on npu:1.. hits an INTERNAL ASSERT; offer one
            # device instead so scripts fail early and clearly (module docstring).
            _device_count = 1
            reason = _cext.unavailable_reason()
            warnings.warn(one_device_message(num_devices, reason), SimulatedDeviceCountWarning, stacklevel=4)
    return PythonDeviceGuard()


def one_device_message(requested: int, reason: Optional[str]) -> str:
    """What the warning says when ``requested`` devices cannot be offered."""
    return (f"simulated NPU: cannot offer {requested} devices, only 1: {reason}. Several simulated "
            "devices need a small C++ device guard built once per torch build: install a C++ compiler "
            "(g++ or clang, or set CXX), the Python development headers and ninja (pip install ninja), "
            "then start a new process. Until then npu:1 and above raise 'Invalid device ID'.")


def cxx_guard_active() -> bool:
    """True when the C++ guard is in use (autograd on every device index works)."""
    return _cxx is not None


def device_count() -> int:
    """Number of simulated devices."""
    return _device_count


def current_device() -> int:
    """The calling thread's current device index."""
    if _cxx is not None:
        return _cxx.current_device()
    return getattr(_local, "index", 0)


def set_device(index: int) -> None:
    """Make ``index`` the calling thread's current device (no range check; see ``_state``)."""
    if _cxx is not None:
        _cxx.set_device(index)
    else:
        _local.index = index


def cxx_guard() -> Optional[object]:
    """The loaded C++ guard object, or None."""
    return _cxx


def cxx_hooks() -> Optional[object]:
    """The C++ module whose backend hooks are registered, or None (it also converts kernel
    arguments: ``_dispatch.use_native``)."""
    return _cxx_hooks


def cxx_hooks_active() -> bool:
    """True when the C++ backend hooks are registered (real pinned host memory)."""
    return _cxx_hooks is not None


def pinned_memory_reason() -> Optional[str]:
    """None when pinned host memory is real (C++ hooks), else why it is emulated in Python only."""
    if _cxx_hooks is not None:
        return None
    from ascend_compat.simulator import _cext

    return _cext.hooks_unavailable_reason() or "the C++ backend hooks are not loaded"


def register(guard) -> None:
    """Register the backend hooks (Python ones unless the C++ hooks are) and (unless the C++
    guard is active) the Python device guard."""
    if _cxx_hooks is None:
        torch._C._acc.register_python_privateuseone_hook(PrivateUse1Hooks())
    if _cxx is None and guard is not None:
        torch._C._acc.register_python_privateuseone_device_guard(guard)
