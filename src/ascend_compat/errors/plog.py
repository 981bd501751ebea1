"""CANN's process log (plog): its line format, file names and directory layout, written and read here.

Line (CANN log reference, "日志记录格式"):
``[Level] ModuleName(PID,PName):yyyy-mm-dd-hh:mm:ss.fff.zzz [FileName:LineNumber]LogContent``, e.g.
``[ERROR] HCCL(69395,python3):2024-04-08-02:55:04.903.511 [task_exception_handler.cc:452][69395][...]...``
(level ERROR, WARNING, INFO, DEBUG or EVENT; the time is local, to the microsecond).

Files: ``plog-<pid>_<yyyymmddhhmmssfff>.log`` (the process id and the file's creation time), under
``<root>/debug/plog/`` (debug log: errors, warnings) and ``<root>/run/plog/`` (run log: key events
such as communicator creation), where ``<root>`` is ``ASCEND_PROCESS_LOG_PATH`` or ``$HOME/ascend/log``
(the layout of the CANN 8 samples in MindCluster's fault-diagnosis tests and of the HCCL user guide).

:class:`PlogWriter` writes such files (the simulated NPU's processes use it); :func:`parse_line` and
:func:`is_plog_name` read them (the cross-rank diagnosis uses them).
"""
from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Optional

LEVELS = ("ERROR", "WARNING", "INFO", "DEBUG", "EVENT")

_LINE = re.compile(r"^\[(ERROR|WARNING|WARN|INFO|DEBUG|EVENT|TRACE)\]\s*([A-Za-z_][A-Za-z0-9_]*)\((\d+),([^)]*)\):"
                   r"(\d{4})-(\d\d)-(\d\d)-(\d\d):(\d\d):(\d\d)\.(\d{3})\.(\d{3})\s?(.*)$")
_NAME = re.compile(r"^plog-(\d{1,10})_\d{1,20}\.log$")
_DEVICE_NAME = re.compile(r"^device-(\d{1,10})_\d{1,20}\.log$")


@dataclass(frozen=True)
class PlogLine:
    level: str
    module: str
    pid: int
    pname: str
    time: float  # seconds since the epoch (the line's local time)
    text: str  # everything after the time: "[file:line]..." and the content


def format_time(when: float) -> str:
    """``yyyy-mm-dd-hh:mm:ss.fff.zzz`` of ``when`` (local time)."""
    micro = int(round((when % 1) * 1_000_000))
    if micro == 1_000_000:
        when, micro = when + 1, 0
    stamp = time.strftime("%Y-%m-%d-%H:%M:%S", time.localtime(when))
    return f"{stamp}.{micro // 1000:03d}.{micro % 1000:03d}"


def format_line(level: str, module: str, pid: int, pname: str, when: float, source: str, text: str) -> str:
    """One plog line (no newline); ``source`` is ``file.cc:line``."""
    return f"[{level}] {module}({pid},{pname}):{format_time(when)} [{source}]{text}"


def parse_line(line: str) -> Optional[PlogLine]:
    """The fields of a plog line, or None when ``line`` is not one."""
    m = _LINE.match(line)
    if m is None:
        return None
    y, mo, d, h, mi, s, ms, us = (int(g) for g in m.group(5, 6, 7, 8, 9, 10, 11, 12))
    try:
        when = datetime(y, mo, d, h, mi, s, ms * 1000 + us).timestamp()
    except ValueError:
        return None
    level = "WARNING" if m.group(1) == "WARN" else m.group(1)
    return PlogLine(level, m.group(2), int(m.group(3)), m.group(4), when, m.group(13))


def is_plog_name(name: str) -> Optional[int]:
    """The pid in a plog (``plog-<pid>_<time>.log``) or device log (``device-<pid>_<time>.log``) file name."""
    m = _NAME.match(name) or _DEVICE_NAME.match(name)
    return int(m.group(1)) if m else None


def log_root(env=None) -> str:
    """Where CANN writes this process's logs: ``ASCEND_PROCESS_LOG_PATH`` or ``$HOME/ascend/log``."""
    env = os.environ if env is None else env
    return env.get("ASCEND_PROCESS_LOG_PATH") or os.path.join(os.path.expanduser("~"), "ascend", "log")


def process_name() -> str:
    """The process name CANN puts in PName (the kernel's ``comm``, e.g. ``python3``)."""
    try:
        with open("/proc/self/comm", encoding="utf-8") as fh:
            return fh.read().strip() or "python"
    except OSError:
        import sys

        return os.path.basename(sys.executable) or "python"


class PlogWriter:
    """Appends plog lines for one process to ``<root>/debug/plog`` and ``<root>/run/plog``.

    Files are created on the first line written to them and flushed after every line, so a process
    that dies by a signal leaves every line it wrote. Thread-safe.
    """

    def __init__(self, root: str, pid: Optional[int] = None, pname: Optional[str] = None) -> None:
        self.root = root
        self.pid = os.getpid() if pid is None else pid
        self.pname = pname or process_name()
        self._files: dict = {}
        self._lock = threading.Lock()
        self._stamp = datetime.now().strftime("%Y%m%d%H%M%S%f")[:17]

    def path(self, kind: str) -> str:
        return os.path.join(self.root, kind, "plog", f"plog-{self.pid}_{self._stamp}.log")

    def write(self, level: str, module: str, source: str, text: str, run: bool = False,
              when: Optional[float] = None) -> None:
        """Write one line to the debug log (``run=True``: the run log)."""
        line = format_line(level, module, self.pid, self.pname, time.time() if when is None else when, source, text)
        kind = "run" if run else "debug"
        with self._lock:
            fh = self._files.get(kind)
            if fh is None:
                os.makedirs(os.path.dirname(self.path(kind)), exist_ok=True)
                fh = self._files[kind] = open(self.path(kind), "a", encoding="utf-8")
            fh.write(line + "\n")
            fh.flush()

    def close(self) -> None:
        with self._lock:
            for fh in self._files.values():
                fh.close()
            self._files.clear()
