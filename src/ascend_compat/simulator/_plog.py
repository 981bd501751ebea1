"""This process's CANN plog writer (:class:`ascend_compat.errors.plog.PlogWriter`): the simulated NPU writes
what CANN's runtime and HCCL write, under ``ASCEND_PROCESS_LOG_PATH`` or ``$HOME/ascend/log``.

One writer per process, made at its first use (a forked child gets its own, with its own pid).
"""
from __future__ import annotations

import os
import threading

from ascend_compat.errors.plog import PlogWriter, log_root

_writer = None
_lock = threading.Lock()


def writer() -> PlogWriter:
    """The plog writer of this process."""
    global _writer
    with _lock:
        if _writer is None or _writer.pid != os.getpid():
            _writer = PlogWriter(log_root())
        return _writer
