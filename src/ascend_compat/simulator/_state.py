"""Process state of the simulated NPU: the active config, device count, current device.

Interface for the ``torch.npu`` module builder (``torch_npu.npu``): ``device_count()`` (the node's
devices), ``visible_device_count()`` (after ``ASCEND_RT_VISIBLE_DEVICES``, which every index check
uses), ``current_device()``, ``set_device(i)``, ``check_index(i)`` and ``config`` (the active
:class:`~ascend_compat.simulator._config.SimConfig`, None before install).
"""
from __future__ import annotations

import os
from typing import Optional

from ascend_compat.simulator import _error_code, _guard
from ascend_compat.simulator._config import SimConfig

config: Optional[SimConfig] = None


def device_count() -> int:
    """Number of simulated NPUs in this process (0 before install)."""
    return _guard.device_count() if config is not None else 0


def visible_device_count() -> int:
    """Devices this process may use: ``torch.npu.device_count()`` (the node's devices filtered by
    ``ASCEND_RT_VISIBLE_DEVICES``, applied once, in ``torch_npu.npu.device``); the node count without it."""
    return (_visible or device_count)()


_visible = None


def register_visible_count(counter) -> None:
    """Called by the ``torch.npu`` module (``torch_npu.npu.device``) when it loads: the device core never
    imports the torch_npu stand-in, the stand-in tells it how visibility is counted."""
    global _visible
    _visible = counter


def current_device() -> int:
    """Index of the calling thread's current NPU."""
    return _guard.current_device()


def set_device(i) -> None:
    """Set the calling thread's current NPU; accepts an int, ``"npu:1"`` or ``torch.device``."""
    _guard.set_device(check_index(i))


def check_index(i) -> int:
    """Normalise a device designation to an index and check it is in range.

    Accepts None (current device), int, ``"npu"``/``"npu:1"`` and ``torch.device``. Raises
    RuntimeError with torch_npu's wording ("Invalid device ID.") for an index outside the *visible*
    devices (:func:`visible_device_count`) and
    ValueError for a non-npu device.
    """
    import torch

    if i is None:
        return current_device()
    if isinstance(i, str):
        i = torch.device(i)
    if isinstance(i, torch.device):
        if i.type != "npu":
            raise ValueError(f"Expected a npu device, but got: {i}")
        if i.index is None:
            return current_device()
        i = i.index
    if isinstance(i, bool) or not isinstance(i, int):
        raise TypeError(f"Invalid device argument: expected an int or npu device, got {i!r}")
    n = visible_device_count()
    if not 0 <= i < n:
        node = device_count()
        if n == node:
            why = (f"the simulated node has {n} NPU(s) (valid indices 0..{n - 1}; raise it with "
                   "install(devices=N) or ASCEND_COMPAT_SIM_DEVICES)")
        elif n == 0:
            why = (f"no NPU is visible (ASCEND_RT_VISIBLE_DEVICES={os.environ.get('ASCEND_RT_VISIBLE_DEVICES')!r}; "
                   f"torch_npu needs distinct ascending ids below the node's {node}, an empty value hides "
                   "every device)")
        else:
            why = (f"{n} of the node's {node} NPU(s) are visible (ASCEND_RT_VISIBLE_DEVICES="
                   f"{os.environ.get('ASCEND_RT_VISIBLE_DEVICES')!r}; visible devices are renumbered "
                   f"0..{n - 1})")
        raise RuntimeError(f"Invalid device ID. Device npu:{i} does not exist: {why}."
                           + _error_code.cpp_error("PTA", "PARAM"))
    return i
