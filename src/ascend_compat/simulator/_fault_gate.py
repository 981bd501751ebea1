"""When an injected fault fires (its rank, its N-th call) and what the process-level kinds do.

:func:`due` counts the calls of a fault's op in this process and says whether the fault applies to
this call: right rank (``RANK``, else the default process group's rank, else 0) and call number at
or past ``call``. :func:`act` performs ``error`` (torch_npu's aclnn failure, with the runtime's plog
lines), ``hang`` (block forever; other threads go on, as when a device task is stuck), ``slow``
(sleep, then return) and ``kill`` (SIGKILL this process: nothing more is written, as in a crash).
"""
from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from typing import Optional

_calls: Counter = Counter()
_lock = threading.Lock()


def this_rank() -> int:
    """The global rank of this process for fault targeting."""
    raw = os.environ.get("RANK")
    if raw is not None and raw.strip().lstrip("-").isdigit():
        return int(raw)
    import sys

    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return 0


def due(fault) -> bool:
    """True when ``fault`` applies to this call of its op (every call is counted, on its rank only)."""
    if fault.rank is not None and this_rank() != fault.rank:
        return False
    with _lock:
        _calls[fault.op] += 1
        n = _calls[fault.op]
    return n >= fault.call


def _plog_error(code: int, call: str) -> None:
    """What the runtime writes to the plog when a kernel fails with ``code``."""
    from ascend_compat.simulator import _plog, _state

    try:
        device = _state.current_device()
    except Exception:  # pragma: no cover - a fault must never fail for want of a device
        device = 0
    from ascend_compat.errors import codes

    label = next((e.label for e in codes.lookup(code) if e.label), "error")
    writer = _plog.writer()
    writer.write("ERROR", "RUNTIME", "task.cc:1021",
                 f"{threading.get_native_id()} PrintErrorInfo:[EXEC][DEFAULT]Kernel task happen error, "
                 f"device_id={device}, stream_id=2, task_id={_calls.total()}, fault kernel_name={call}, "
                 f"[{label}]")
    writer.write("ERROR", "RUNTIME", "log_inner.cpp:161",
                 f"{threading.get_native_id()} ReportCallError:synchronize stream failed, runtime result = {code}")


def act(fault, call: str) -> Optional[None]:
    """Perform a process-level fault (``error``, ``hang``, ``slow``, ``kill``) for ``call`` (the ACL/HCCL
    function the op runs as, e.g. ``aclnnAddmm``)."""
    if fault.kind == "error":
        from ascend_compat.errors import torch_npu_text
        from ascend_compat.simulator import _error_code

        code = int(fault.value)
        _plog_error(code, call)
        raise RuntimeError(
            f"NPU function error: call {call} failed, error code is {code}" + _error_code.cpp_error("PTA", "ACL")
            + (f"\n[Error]: {torch_npu_text.ACL_TEXTS[code]}" if code in torch_npu_text.ACL_TEXTS else "")
            + f"\n[ERROR] (injected by ASCEND_COMPAT_SIM_FAULTS) {call} reported error {code}")
    if fault.kind == "slow":
        time.sleep(fault.value)
    elif fault.kind == "hang":
        forever = threading.Event()
        while True:
            forever.wait(3600)
    elif fault.kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)  # pragma: no cover - the signal ends the process first
    return None
