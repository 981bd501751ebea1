"""Process state of the simulated NPU: the active config, device count, current device.

Interface for the ``torch.npu`` module builder (``npu_api``): ``device_count()``,
``current_device()``, ``set_device(i)``, ``check_index(i)`` and ``config`` (the active
:class:`~ascend_compat.simulator._config.SimConfig`, None before install).
"""
from __future__ import annotations

import os
import time
from typing import Optional

from ascend_compat.simulator import _guard
from ascend_compat.simulator._config import SimConfig

config: Optional[SimConfig] = None


def device_count() -> int:
    """Number of simulated NPUs in this process (0 before install)."""
    return _guard.device_count() if config is not None else 0


def current_device() -> int:
    """Index of the calling thread's current NPU."""
    return _guard.current_device()


def set_device(i) -> None:
    """Set the calling thread's current NPU; accepts an int, ``"npu:1"`` or ``torch.device``."""
    _guard.set_device(check_index(i))


def _err_suffix(code: str, text: str) -> str:
    # torch_npu appends "[ERROR] <time> (PID:.., Device:.., RankID:..) ERR<code> <text>" to its errors.
    rank = os.environ.get("RANK", "-1")
    return (f"\n[ERROR] {time.strftime('%Y-%m-%d-%H:%M:%S')} (PID:{os.getpid()}, "
            f"Device:{current_device() if config else -1}, RankID:{rank}) {code} {text}")


def check_index(i) -> int:
    """Normalise a device designation to an index and check it is in range.

    Accepts None (current device), int, ``"npu"``/``"npu:1"`` and ``torch.device``. Raises
    RuntimeError with torch_npu's wording ("Invalid device ID.") for an out-of-range index and
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
    n = device_count()
    if not 0 <= i < n:
        raise RuntimeError(
            f"Invalid device ID. Device npu:{i} does not exist: the simulated node has {n} NPU(s) "
            f"(valid indices 0..{n - 1}; raise it with install(devices=N) or ASCEND_COMPAT_SIM_DEVICES)."
            + _err_suffix("ERR00001", "PTA invalid parameter")
        )
    return i
