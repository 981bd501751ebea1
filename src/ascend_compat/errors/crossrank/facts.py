"""What a job's log files say, gathered line by line into bounded per-rank facts.

:class:`JobFacts` reads one file at a time (:meth:`JobFacts.read`, streaming through
:func:`ascend_compat.errors.logscan.iter_log_text`) and keeps only what the diagnosis needs: which
process is which rank on which node and device (HCCL's communicator lines, torch_npu's error suffix,
torchrun's ``[rankN]:`` prefixes and failure report), each rank's first error, timeout and
consistency failure, HCCL's "Cluster Exception" claims, and how torchrun ended each process. Memory
grows with the number of ranks, not with the size of the logs.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Dict, List, Optional, Tuple

from ascend_compat.errors import hccl_text, plog, torch_npu_text
from ascend_compat.errors.crossrank.sources import PLOG, Source

ERROR, TIMEOUT, INCONSISTENT, KILLED, TERMINATED, EXITED = ("error", "timeout", "inconsistent", "killed",
                                                              "terminated", "exited")
#: runtime codes that mean "a collective waited too long": consequences, not causes
TIMEOUT_CODES = frozenset({"507048", "507046", "507047", "107020", "hccl:9", "EI0002", "EI0006"})

_CODE = re.compile(r"(?:runtime result|error code is|error code:|ErrCode=)\s*=?\s*(\d{6})")
_ECODE = re.compile(r"\b(E[A-Z0-9]\d{4})\b")
_PREFIX = re.compile(r"^\[(?:(default|[a-z_]+)(\d+))\]:|^\[rank(\d+)\]:")
_EXCEPTION = re.compile(r"^(?:\w+\.)*(\w*(?:Error|Exception|Interrupt)): ?(.*)")
_GLOG = re.compile(r"^([IWEF])(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+)\s+\d+\s+\S+\]\s?(.*)")
_SIGTERM = re.compile(r"Sending process (\d+) closing signal (\w+)")
_FAILED = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)")
_FIELD = re.compile(r"^\s*(time|host|rank|exitcode)\s*:\s*(.*)$")
_EXEC_SET = re.compile(r"HCCL_EXEC_TIMEOUT set by [^\[]*\[(\d+)\]")
_MAX_TEXT = 300
#: every line the text reader acts on contains one of these (errors, codes, torchrun's reports)
_NEEDLES = ("rror", "EI0", "ERR", "Watchdog", "Notify", "inconsistent", "signal", "exitcode", "time      :",
            "host      :", "rank      :", "runtime result", "error code", "Exception", "Interrupt")


@dataclass
class Event:
    """One thing that happened to a process: its kind, when, which code, the line that says it."""

    kind: str
    time: Optional[float]
    code: Optional[str]
    text: str
    source: str
    rank: Optional[int] = None
    pid: Optional[int] = None
    node: Optional[str] = None
    local_rank: Optional[int] = None
    device: Optional[int] = None
    detail: dict = field(default_factory=dict)


@dataclass
class Process:
    """What identifies one worker process."""

    pid: Optional[int] = None
    rank: Optional[int] = None
    size: Optional[int] = None
    node: Optional[str] = None
    server: Optional[str] = None
    device: Optional[int] = None
    local_rank: Optional[int] = None


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT - 3] + "..."


class _Block:
    """The error facts of one rank's console output (a torchrun per-rank file, or one ``[rankN]:`` stream)."""

    def __init__(self) -> None:
        self.codes: List[str] = []
        self.exception: Optional[str] = None
        self.first_line: Optional[str] = None
        self.suffix = None  # (time, pid, device, rank, ERR)
        self.glog_time: Optional[Tuple] = None
        self.timeout = False
        self.watchdog = False
        self.inconsistent: Optional[tuple] = None
        self.remote: Optional[str] = None

    def feed(self, line: str) -> None:
        if "[ERROR]" in line and "(PID:" in line and self.suffix is None:
            self.suffix = torch_npu_text.parse_suffix(line)
        for code in _CODE.findall(line) + _ECODE.findall(line):
            if code not in self.codes and len(self.codes) < 16:
                self.codes.append(code)
        if "Notify register times out" in line:
            self.timeout = True
            m = hccl_text.EI0002.search(line)
            if m:
                self.remote = m.group(1)
        if "Watchdog caught collective operation timeout" in line:
            self.timeout = self.watchdog = True
        if "inconsistent between ranks" in line and self.inconsistent is None:
            m = hccl_text.EI0005.search(line)
            if m:
                self.inconsistent = m.groups()
        m = _EXCEPTION.match(line)
        if m:  # the last exception line of a traceback is the one that ended the process
            self.exception = _clip(line)
        if self.first_line is None and ("error code" in line or "runtime result" in line):
            self.first_line = _clip(line)

    def event(self, source: Source, rank: Optional[int], local_rank: Optional[int]) -> Optional[Event]:
        if not (self.codes or self.exception or self.timeout or self.inconsistent):
            return None
        when, pid, device = (self.suffix[0], self.suffix[1], self.suffix[2]) if self.suffix else (None, None, None)
        if self.suffix and self.suffix[3] >= 0:
            rank = self.suffix[3]
        detail = {}
        if self.inconsistent:
            kind, code = INCONSISTENT, "EI0005"
            detail = dict(zip(("tag", "parameter", "local", "remote"), self.inconsistent))
        elif self.timeout or (self.codes and all(c in TIMEOUT_CODES for c in self.codes)):
            kind = TIMEOUT
            code = "EI0002" if "EI0002" in self.codes else ("watchdog" if self.watchdog else self.codes[0])
            detail = {"remote": self.remote}
        else:
            kind = ERROR
            code = next((c for c in self.codes if c not in TIMEOUT_CODES and not c.startswith("ERR")), None)
        text = self.exception or self.first_line or ""
        return Event(kind, when, code, text, source.path, rank=rank, pid=pid, node=source.node,
                     local_rank=local_rank, device=device, detail=detail)


class JobFacts:
    """Facts of one job, fed file by file (see the module doc)."""

    def __init__(self) -> None:
        self.processes: Dict[int, Process] = {}  # pid -> process (from plogs and launchers)
        self.events: List[Event] = []
        self.claims: Dict[tuple, tuple] = {}  # (location, kind) -> (arrival, discoverer)
        self.exec_timeout: Optional[int] = None
        self.terminated: Dict[int, Optional[Tuple]] = {}  # pid -> glog time tuple of the launcher's SIGTERM
        self.failures: List[dict] = []  # torchrun failure reports
        self.files = 0
        self.year: Optional[int] = None
        self._plog_first: Dict[tuple, Event] = {}

    # ------------------------------------------------------------------ reading
    def read(self, source: Source, lines_of) -> None:
        """Feed every line of ``source`` (``lines_of(path)`` yields text blocks of whole lines)."""
        self.files += 1
        if source.kind == PLOG:
            for block in lines_of(source.path):
                for line in block.splitlines():
                    self._plog_line(source, line)
            return
        blocks: Dict[tuple, _Block] = {}
        report: dict = {"node": source.node, "source": source.path}
        for block in lines_of(source.path):
            for raw in block.splitlines():
                self._text_line(source, raw, blocks, report)
        if report.get("rank") is not None:
            self.failures.append(report)
        for (rank, local), blk in blocks.items():
            event = blk.event(source, rank, source.local_rank if local is None else local)
            if event is not None:
                if event.time is None and blk.glog_time is not None:
                    event.detail["glog"] = blk.glog_time
                self.events.append(event)

    def _process(self, pid: int) -> Process:
        return self.processes.setdefault(pid, Process(pid=pid))

    def _plog_line(self, source: Source, line: str) -> None:
        if not line.startswith("[ERROR]") and "SetupAgent" not in line and "HCCL_EXEC_TIMEOUT set by" not in line:
            return  # most lines: INFO/WARNING noise, rejected without a regex
        rec = plog.parse_line(line)
        if rec is None:
            return
        if self.year is None:
            self.year = time.localtime(rec.time).tm_year
        text = rec.text
        pid = source.pid if source.pid is not None else rec.pid  # one plog file per process
        if "SetupAgent" in text:
            m = hccl_text.SETUP.search(text)
            if m:
                size, rank = int(m.group(1)), int(m.group(2))
                proc = self._process(pid)
                if proc.size is None or size >= proc.size:  # the world group names the global rank
                    proc.rank, proc.size, proc.server = rank, size, m.group(4)
                    proc.device = int(m.group(5)) if m.group(5) is not None else proc.device
                    proc.node = proc.node or source.node
            return
        if "HCCL_EXEC_TIMEOUT set by" in text:
            m = _EXEC_SET.search(text)
            if m:
                self.exec_timeout = int(m.group(1))
            return
        if rec.level != "ERROR":
            return
        self._process(pid).node = self._process(pid).node or source.node
        m = hccl_text.CLUSTER.search(text)
        if m:
            self.claims.setdefault((m.group(1), m.group(4)), (m.group(2), m.group(3)))
            return
        kind, code, detail = ERROR, None, {}
        m = hccl_text.CHECK_FAIL.search(text)
        if m:
            kind, code = INCONSISTENT, "EI0005"
            detail = {"parameter": m.group(1), "local": m.group(2), "remote": m.group(3)}
        elif "taskType[Notify Wait]" in text or "remote rank:[" in text or "groupRank information" in text:
            kind, code = TIMEOUT, "EI0002"
            m = hccl_text.REMOTE_RANK.search(text)
            if m:
                detail = {"remote": m.group(1)}
            m = hccl_text.NOTIFY_BASE.search(text)
            if m:
                detail = {"tag": m.group(1)}
        else:
            codes = _CODE.findall(text)
            code = codes[0] if codes else None
            if code in TIMEOUT_CODES:
                kind = TIMEOUT
        key = (pid, kind)
        first = self._plog_first.get(key)
        if first is None:
            first = self._plog_first[key] = Event(kind, rec.time, code, _clip(line), source.path, pid=pid,
                                                  node=source.node, detail=dict(detail))
            self.events.append(first)
        else:
            if first.code is None and code is not None:
                first.code = code
            for k, v in detail.items():
                first.detail.setdefault(k, v)

    def _text_line(self, source: Source, raw: str, blocks: Dict[tuple, _Block], report: dict) -> None:
        if not any(needle in raw for needle in _NEEDLES) and not raw.endswith("]:"):
            return  # step and progress lines: rejected without a regex
        line, rank, local = raw, None, None
        for _ in range(2):  # "[default1]:[rank3]:..." (torchrun --tee, then torch's rank prefix)
            m = _PREFIX.match(line)
            if not m:
                break
            if m.group(3) is not None:
                rank = int(m.group(3))
            else:
                local = int(m.group(2))
            line = line[m.end():]
            if line.startswith(" "):  # torch's "[rank3]: " prefix ends with a space
                line = line[1:]
        g = _GLOG.match(line)
        if g:
            self._launcher_line(g, blocks)
        f = _FIELD.match(line)
        if f and not (rank is not None or local is not None):
            self._report_field(f.group(1), f.group(2).strip(), report)
            return
        if line.startswith("[") and line.rstrip().endswith("]:") and line.strip()[1:-2].isdigit():
            if report.get("rank") is not None:
                self.failures.append(dict(report))
            keep = {"node": report.get("node"), "source": report.get("source")}
            report.clear()
            report.update(keep)
            return
        key = (rank, local) if rank is not None or local is not None else (None, None)
        if key == (None, None) and (not _interesting(line) or "ChildFailedError" in line):
            return
        blk = blocks.get(key)
        if blk is None:
            if len(blocks) > 4096:
                return
            blk = blocks[key] = _Block()
        blk.feed(line)
        if g and blk.glog_time is None and g.group(1) in "EF":
            blk.glog_time = g.groups()[1:7]

    def _launcher_line(self, g, blocks) -> None:
        msg = g.group(8)
        m = _SIGTERM.search(msg)
        if m:
            self.terminated.setdefault(int(m.group(1)), g.groups()[1:7])
            return
        m = _FAILED.search(msg)
        if m:
            pid = int(m.group(3))
            self._process(pid).local_rank = int(m.group(2))

    def _report_field(self, name: str, value: str, report: dict) -> None:
        if name == "rank":
            m = re.match(r"(\d+) \(local_rank: (\d+)\)", value)
            if m:
                report["rank"], report["local_rank"] = int(m.group(1)), int(m.group(2))
        elif name == "exitcode":
            m = re.match(r"(-?\d+) \(pid: (\d+)\)", value)
            if m:
                report["exitcode"], report["pid"] = int(m.group(1)), int(m.group(2))
        elif name == "time":
            try:
                report["time"] = datetime.strptime(value, "%Y-%m-%d_%H:%M:%S").timestamp()
            except ValueError:
                pass
        elif name == "host":
            report["host"] = value

    # ------------------------------------------------------------------ after reading
    def glog_time(self, parts) -> Optional[float]:
        """A glog time (month, day, h, m, s, fraction) on the job's year."""
        if parts is None:
            return None
        mo, d, h, mi, s, frac = parts
        year = self.year or time.localtime().tm_year
        try:
            return datetime(year, int(mo), int(d), int(h), int(mi), int(s)).timestamp() + float("0." + frac)
        except ValueError:
            return None


def _interesting(line: str) -> bool:
    """Cheap filter for lines of unprefixed text logs worth feeding to a block."""
    return ("error" in line.lower()) or ("Error" in line) or ("EI00" in line) or ("Watchdog" in line)
