"""Runtime controls of the simulated ``torch.npu``: sync/task-queue modes, timeouts, health checks.

The real switches tune CANN's asynchronous task queue and fault handling. The simulator runs every
operator synchronously on the host and never faults, so the setters validate and record their
arguments (getters answer consistently) and health checks report a healthy device; fault-recovery
and raw-runtime APIs are refused with an explanation.
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Optional

from ._errors import pta_error, unsupported
from .device import _check_valid, _get_device_index, _lazy_init

def utilization(device: Any = None) -> int:
    """Device utilisation in percent; a simulated device reports 0 (no asynchronous work is ever pending)."""
    device_id = _get_device_index(device, optional=True)
    _check_valid(device_id)
    _lazy_init()
    return 0


def ipc_collect() -> None:
    """No NPU IPC exists in the simulator, so there is nothing to collect."""
    _lazy_init()


_op_timeout_ms: Optional[int] = None


def set_op_timeout_ms(timeout: int) -> None:
    """Recorded only: simulated operators run synchronously on the host and never time out. The
    parameter is named ``timeout``, as torch_npu's is."""
    global _op_timeout_ms
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 0:
        raise ValueError(f"timeout must be a non-negative int, but got {timeout!r}" + pta_error("VALUE"))
    _op_timeout_ms = timeout


def check_uce_in_memory(device_id: int) -> int:
    """0 = no uncorrectable memory error: simulated HBM never fails."""
    _lazy_init()
    _check_valid(_get_device_index(device_id, optional=True))
    return 0


def stress_detect(detect_type: str = "aic") -> int:
    """Hardware self-test: a simulated device always passes (0); argument checks follow torch_npu."""
    if detect_type not in ("aic", "hccs"):
        warnings.warn(
            "Detect_type should be `aic` or `hccs`. "
            "For details, `aic` is for `Online aicore detect`, and `hccs` is for `Online p2p detect`."
        )
        return 1
    _lazy_init()
    if detect_type == "hccs":
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            warnings.warn("torch.distributed should be initialized for p2p detection.")
            return 1
        if any(os.getenv(k) is None for k in ("RANK", "LOCAL_WORLD_SIZE", "WORLD_SIZE")):
            warnings.warn("Environment variables 'RANK', 'LOCAL_WORLD_SIZE' or 'WORLD_SIZE' are not set.")
            return 1
    return 0


def stop_device(device_id: int) -> int:
    raise unsupported("stop_device", "fault recovery (stop/restart of a device's task queue) needs the real "
                      "NPU runtime; simulated devices never fault")


def restart_device(device_id: int, rebuild_all_resources: bool = False) -> None:
    raise unsupported("restart_device", "fault recovery (stop/restart of a device's task queue) needs the real "
                      "NPU runtime; simulated devices never fault")


def npurt():
    raise unsupported("npurt", "it returns the raw NPU runtime (host registration, raw streams), which does "
                      "not exist without CANN")


_sync_debug_mode = 0


def set_sync_debug_mode(debug_mode: Any) -> None:
    """Recorded as in torch_npu; the simulator runs synchronously, so no sync warning is ever raised."""
    global _sync_debug_mode
    if isinstance(debug_mode, str):
        table = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in table:
            raise RuntimeError(
                "invalid value of debug_mode, expected one of `default`, `warn`, `error`" + pta_error("PARAM")
            )
        debug_mode = table[debug_mode]
    _sync_debug_mode = int(debug_mode)


def get_sync_debug_mode() -> int:
    return _sync_debug_mode


def _initial_task_queue() -> int:
    if os.getenv("ASCEND_LAUNCH_BLOCKING") == "1":
        return 0
    value = os.getenv("TASK_QUEUE_ENABLE", "1")
    return int(value) if value in ("0", "1", "2") else 1


_task_queue: Optional[int] = None


def set_task_queue_enable(mode: Any) -> None:
    """Recorded (0/1/2) as in torch_npu; ``ASCEND_LAUNCH_BLOCKING=1`` forces the effective mode to 0."""
    global _task_queue
    if isinstance(mode, str):
        mode = int(mode)
    if mode not in (0, 1, 2):
        raise RuntimeError(f"mode must be 0, 1, or 2, but got {mode}." + pta_error("VALUE"))
    _task_queue = mode


def get_task_queue_enable() -> int:
    if os.getenv("ASCEND_LAUNCH_BLOCKING") == "1":
        return 0
    return _initial_task_queue() if _task_queue is None else _task_queue
