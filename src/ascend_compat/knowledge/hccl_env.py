"""The job environment HCCL and torch_npu's HCCL process group read, parsed once.

:func:`read` turns an environment mapping (``os.environ``, another node's ``env`` dump) into an
:class:`HcclEnv`: the values the job will really run with and the :class:`Problem` each odd value
causes. The simulated hccl backend acts on it, ``doctor --cluster`` reports its problems, and the
cross-rank diagnosis reads its timeouts. Facts, with where they come from:

* ``HCCL_EXEC_TIMEOUT``: torch_npu reads it with C ``strtol`` (``OptionsManager::GetHCCLExecTimeout``):
  unset or negative means HCCL's default, 1836 s (``defaultExecTimeout`` in ``ProcessGroupHCCL.cpp``;
  the CANN reference gives the same default for Atlas A2/A3), a negative value with the warning
  "Get env HCCL_EXEC_TIMEOUT less than 0, so reset it to the default value."; 0 means never time out.
* ``HCCL_CONNECT_TIMEOUT``: integer seconds in [120, 7200], default 120 (CANN HCCL reference); with a
  rank table torch_npu warns below 300 s (``createHCCLCommEx``).
* ``HCCL_EVENT_TIMEOUT``: when set it must exceed ``HCCL_EXEC_TIMEOUT``, else torch_npu warns
  "The value of HCCL_EVENT_TIMEOUT:<e> is less than or equal to the value of HCCL_EXEC_TIMEOUT:<x>.".
* ``HCCL_BUFFSIZE``: MB, ``strtol``, default 200; torch_npu refuses a value <= 0 with
  "HCCL_BUFFSIZE should be positive." and ``ERR00003 PTA invalid value`` (``GetHcclBufferSize``).
* ``HCCL_IF_IP``: the host NIC address for HCCL's root information; it takes precedence over
  ``HCCL_SOCKET_IFNAME`` (CANN ``HcclGetRootInfo`` constraints). ``HCCL_SOCKET_IFNAME``: NIC names,
  comma-separated.
* ``RANK_TABLE_FILE``: torch_npu uses it only when the path exists, is a regular file, is not a
  symbolic link and is owner-readable (``checkFilePathReadable``); otherwise it negotiates through
  the root rank as if it were unset. A readable file with wrong contents is not ignored: HCCL
  fails when it builds the communicator.
"""
from __future__ import annotations

import ipaddress
import os
import stat
from dataclasses import dataclass, field
from typing import Mapping, Optional

DEFAULT_EXEC_TIMEOUT = 1836
EXEC_TIMEOUT_MAX = 2147483647
DEFAULT_CONNECT_TIMEOUT = 120
CONNECT_TIMEOUT_RANGE = (120, 7200)
#: torch_npu warns below this HCCL_CONNECT_TIMEOUT when the communicator is built from a rank table
RANK_TABLE_CONNECT_TIMEOUT = 300
DEFAULT_BUFFSIZE_MB = 200

ERROR, WARNING, INFO = "error", "warning", "info"

VARIABLES = ("HCCL_EXEC_TIMEOUT", "HCCL_CONNECT_TIMEOUT", "HCCL_EVENT_TIMEOUT", "HCCL_BUFFSIZE", "HCCL_IF_IP",
             "HCCL_SOCKET_IFNAME", "RANK_TABLE_FILE", "MASTER_ADDR", "MASTER_PORT")


@dataclass(frozen=True)
class Problem:
    """One odd value: the variable, what happens with it (``message``), how to fix it."""

    variable: str
    severity: str  # ERROR (the job fails), WARNING (it runs, not as meant), INFO
    message: str
    fix: str = ""


@dataclass(frozen=True)
class HcclEnv:
    """The values a job runs with (seconds, MB) and the problems of the raw values."""

    exec_timeout: int = DEFAULT_EXEC_TIMEOUT  # 0: never
    connect_timeout: int = DEFAULT_CONNECT_TIMEOUT
    event_timeout: Optional[int] = None
    buffsize_mb: int = DEFAULT_BUFFSIZE_MB
    if_ip: Optional[str] = None
    socket_ifname: Optional[str] = None
    rank_table_file: Optional[str] = None  # set and usable by torch_npu
    master_addr: Optional[str] = None
    master_port: Optional[int] = None
    raw: Mapping[str, str] = field(default_factory=dict)  # the variables above that were set
    problems: tuple[Problem, ...] = ()

    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]


def strtol(text: str) -> tuple[int, bool]:
    """C ``strtol(text, nullptr, 10)``: ``(value, whole)``; value 0 when no digits lead, ``whole`` False
    when characters were left unread."""
    s = text.lstrip(" \t\n\r\f\v")
    i = 1 if s[:1] in "+-" else 0
    j = i
    while j < len(s) and s[j].isdigit():
        j += 1
    if j == i:
        return 0, False
    return int(s[:j]), j == len(s)


def _integer(env: Mapping[str, str], name: str, problems: list) -> Optional[int]:
    """The value torch_npu's strtol reads, a problem noted when the text is not a whole integer."""
    raw = env.get(name)
    if raw is None:
        return None
    value, whole = strtol(raw)
    if not whole:
        problems.append(Problem(name, WARNING, f"{name}={raw!r} is not an integer; torch_npu reads it as {value} "
                                               "(the leading digits)", f"set {name} to a whole number of seconds"))
    return value


def _exec_timeout(env, problems) -> int:
    value = _integer(env, "HCCL_EXEC_TIMEOUT", problems)
    if value is None:
        return DEFAULT_EXEC_TIMEOUT
    if value < 0:
        problems.append(Problem("HCCL_EXEC_TIMEOUT", WARNING,
                                "Get env HCCL_EXEC_TIMEOUT less than 0, so reset it to the default value.",
                                f"unset HCCL_EXEC_TIMEOUT for the default {DEFAULT_EXEC_TIMEOUT} s or set it to "
                                "the seconds a collective may wait"))
        return DEFAULT_EXEC_TIMEOUT
    if value > EXEC_TIMEOUT_MAX:
        problems.append(Problem("HCCL_EXEC_TIMEOUT", ERROR, f"HCCL_EXEC_TIMEOUT={value} is above HCCL's maximum "
                                                            f"{EXEC_TIMEOUT_MAX}", "set a smaller value"))
        return DEFAULT_EXEC_TIMEOUT
    if value == 0:
        problems.append(Problem("HCCL_EXEC_TIMEOUT", WARNING, "HCCL_EXEC_TIMEOUT=0: collectives never time out, so a "
                                                              "hung or dead rank stalls the job until it is killed",
                                "set HCCL_EXEC_TIMEOUT to a few times the longest gap between collectives"))
    return value


def _connect_timeout(env, problems) -> int:
    value = _integer(env, "HCCL_CONNECT_TIMEOUT", problems)
    if value is None:
        return DEFAULT_CONNECT_TIMEOUT
    low, high = CONNECT_TIMEOUT_RANGE
    if not low <= value <= high:
        problems.append(Problem("HCCL_CONNECT_TIMEOUT", ERROR, f"HCCL_CONNECT_TIMEOUT={env['HCCL_CONNECT_TIMEOUT']!r}"
                                                               f" is outside HCCL's range [{low}, {high}] seconds",
                                f"set HCCL_CONNECT_TIMEOUT between {low} and {high}"))
        return min(max(value, low), high)
    return value


def _buffsize(env, problems) -> int:
    value = _integer(env, "HCCL_BUFFSIZE", problems)
    if value is None:
        return DEFAULT_BUFFSIZE_MB
    if value <= 0:
        problems.append(Problem("HCCL_BUFFSIZE", ERROR, "HCCL_BUFFSIZE should be positive.",
                                f"set HCCL_BUFFSIZE to a size in MB (default {DEFAULT_BUFFSIZE_MB}) or unset it"))
        return DEFAULT_BUFFSIZE_MB
    return value


def _address(env, problems) -> Optional[str]:
    raw = env.get("HCCL_IF_IP")
    if raw is None:
        return None
    try:
        return str(ipaddress.ip_address(raw.strip()))
    except ValueError:
        problems.append(Problem("HCCL_IF_IP", ERROR, f"HCCL_IF_IP={raw!r} is not an IPv4 or IPv6 address",
                                "set HCCL_IF_IP to this node's host NIC address (ip addr shows it)"))
        return None


def rank_table_usable(path: str) -> Optional[str]:
    """Why torch_npu would not use ``path`` as its rank table (None: it would)."""
    try:
        st = os.lstat(path)
    except OSError:
        return "does not exist"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if not st.st_mode & stat.S_IRUSR:
        return "is not readable by its owner"
    return None


def _rank_table(env, problems, connect_timeout: int) -> Optional[str]:
    path = env.get("RANK_TABLE_FILE")
    if not path:
        return None
    why = rank_table_usable(path)
    if why is not None:
        problems.append(Problem("RANK_TABLE_FILE", WARNING, f"RANK_TABLE_FILE={path} {why}: torch_npu ignores it and "
                                                            "builds the communicator through the root rank",
                                "point RANK_TABLE_FILE at the real rank table file (not a link), or unset it"))
        return None
    if connect_timeout < RANK_TABLE_CONNECT_TIMEOUT:
        problems.append(Problem("HCCL_CONNECT_TIMEOUT", WARNING,
                                "When creating an HCCL process group using the RANK_TABLE_FILE method, the "
                                "connection may time out. It is recommended to set the timeout duration of "
                                "HCCL_CONNECT_TIMEOUT to 300 seconds or more.",
                                f"set HCCL_CONNECT_TIMEOUT={RANK_TABLE_CONNECT_TIMEOUT} or more"))
    return path


def read(env: Optional[Mapping[str, str]] = None) -> HcclEnv:
    """Parse the HCCL job variables of ``env`` (default: this process's environment)."""
    env = os.environ if env is None else env
    problems: list[Problem] = []
    exec_timeout = _exec_timeout(env, problems)
    connect_timeout = _connect_timeout(env, problems)
    event_timeout = _integer(env, "HCCL_EVENT_TIMEOUT", problems)
    if event_timeout is not None and event_timeout > 0 and exec_timeout and event_timeout <= exec_timeout:
        problems.append(Problem("HCCL_EVENT_TIMEOUT", WARNING,
                                f"The value of HCCL_EVENT_TIMEOUT:{event_timeout} is less than or equal to the "
                                f"value of HCCL_EXEC_TIMEOUT:{exec_timeout}.",
                                "set HCCL_EVENT_TIMEOUT above HCCL_EXEC_TIMEOUT, or unset it"))
    if_ip = _address(env, problems)
    ifname = env.get("HCCL_SOCKET_IFNAME") or None
    if if_ip and ifname:
        problems.append(Problem("HCCL_SOCKET_IFNAME", INFO, f"HCCL_IF_IP={if_ip} takes precedence over "
                                                            f"HCCL_SOCKET_IFNAME={ifname}"))
    port = None
    if env.get("MASTER_PORT"):
        value, whole = strtol(env["MASTER_PORT"])
        if not whole or not 0 < value < 65536:
            problems.append(Problem("MASTER_PORT", ERROR, f"MASTER_PORT={env['MASTER_PORT']!r} is not a TCP port",
                                    "set MASTER_PORT to a free port between 1024 and 65535"))
        else:
            port = value
    return HcclEnv(exec_timeout=exec_timeout, connect_timeout=connect_timeout, event_timeout=event_timeout,
                   buffsize_mb=_buffsize(env, problems), if_ip=if_ip, socket_ifname=ifname,
                   rank_table_file=_rank_table(env, problems, connect_timeout),
                   master_addr=env.get("MASTER_ADDR") or None, master_port=port,
                   raw={k: env[k] for k in VARIABLES if k in env}, problems=tuple(problems))
