"""The fault chain: from a job's facts, the rank that broke it and the ranks that failed because of it.

The rules follow MindCluster's root-cause-node diagnosis (``ascend-fd``, "root cluster"): the rank
whose first error is not a timeout and comes before the others' timeouts is the root (its code
113); ranks that never report the timeout the others report are the suspects (112); when every rank
timed out, the last to report it was late if the reports spread over more than the timeout (110),
else the cause cannot be located (111). Added, in this order of precedence:

1. a collective-argument mismatch (EI0005): the rank whose value differs from the others';
2. the earliest non-timeout error before the first timeout (an AI Core error, an exception);
3. a process killed by a signal its launcher did not send (SIGKILL from the OOM killer, a crash);
4. the rank HCCL's exception spreading names ("Cluster Exception Location": lost heartbeat = the
   process exited, stuck = it stopped entering collectives);
5. the rank that never reached the collective the others timed out in;
6. the late reporter (110), or no root (111).

Every other rank that failed is a consequence, with how it failed.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from ascend_compat.errors.crossrank.facts import (ERROR, EXITED, INCONSISTENT, KILLED, TERMINATED, TIMEOUT, Event,
                                                  JobFacts)
from ascend_compat.errors.hccl_text import HEARTBEAT_LOST, STUCK

#: how a consequence failed, in order of precedence when a rank has several events
_PRECEDENCE = (INCONSISTENT, ERROR, TIMEOUT, KILLED, TERMINATED, EXITED)


@dataclass
class RootCause:
    rank: Optional[int]
    node: Optional[str]
    device: Optional[int]
    code: Optional[str]
    cause: str  # error, inconsistent, killed, lost, stuck, late, silent
    first_error: str
    time: Optional[float] = None
    source: Optional[str] = None
    rule: str = ""
    suspects: List[int] = field(default_factory=list)


@dataclass
class Consequence:
    rank: int
    node: Optional[str]
    code: Optional[str]
    how: str
    time: Optional[float] = None


@dataclass
class Diagnosis:
    ranks: List[int]
    nodes: List[str]
    files: int
    root: Optional[RootCause]
    consequences: List[Consequence]
    timeline: List[Event]
    exec_timeout: Optional[int]
    note: str = ""
    unattributed: int = 0


class _Job:
    """Facts resolved to ranks."""

    def __init__(self, facts: JobFacts) -> None:
        self.facts = facts
        procs = facts.processes
        for report in facts.failures:  # torchrun's failure report ties pid, rank and local rank
            pid = report.get("pid")
            if pid is not None:
                p = facts._process(pid)
                p.rank = report["rank"] if p.rank is None else p.rank
                p.local_rank = report.get("local_rank")
                p.node = p.node or report.get("node")
        self.by_local = {(p.node, p.local_rank): p.rank for p in procs.values()
                         if p.rank is not None and p.local_rank is not None}
        self.rank_proc: Dict[int, object] = {}
        for p in procs.values():
            if p.rank is not None and (p.rank not in self.rank_proc or p.size):
                self.rank_proc[p.rank] = p
        self.events: List[Event] = []
        self.unattributed = 0
        for e in facts.events:
            self._attribute(e)
        self._exits()
        self.events = _merged(self.events)
        sizes = [p.size for p in procs.values() if p.size]
        known = set(self.rank_proc) | {e.rank for e in self.events}
        self.world = max(sizes) if sizes else (max(known) + 1 if known else 0)
        self.ranks = sorted(set(range(self.world)) | known)

    def _attribute(self, e: Event) -> None:
        proc = self.facts.processes.get(e.pid) if e.pid is not None else None
        if e.rank is None and proc is not None:
            e.rank = proc.rank
        if e.rank is None and e.local_rank is not None:
            e.rank = self.by_local.get((e.node, e.local_rank))
        if e.rank is None:
            self.unattributed += 1
            return
        proc = proc or self.rank_proc.get(e.rank)
        if proc is not None:
            e.device = e.device if e.device is not None else proc.device
            e.node = e.node or proc.node or (proc.server or "").split("%")[0] or None
        if e.time is None and "glog" in e.detail:
            e.time = self.facts.glog_time(e.detail["glog"])
        self.events.append(e)

    def _exits(self) -> None:
        seen = set()
        for report in self.facts.failures:
            pid, code = report.get("pid"), report.get("exitcode")
            if pid is None or code is None or pid in seen:
                continue
            seen.add(pid)
            rank = report.get("rank")
            if pid in self.facts.terminated:
                when = self.facts.glog_time(self.facts.terminated[pid])
                self.events.append(Event(TERMINATED, when, "SIGTERM", "terminated by its launcher (SIGTERM) after "
                                         "another local process failed", report.get("source", "launcher"),
                                         rank=rank, pid=pid,
                                         node=report.get("node")))
            elif code < 0:
                name = {9: "SIGKILL", 6: "SIGABRT", 11: "SIGSEGV", 7: "SIGBUS", 15: "SIGTERM"}.get(-code, f"signal {-code}")
                self.events.append(Event(KILLED, report.get("time"), name, f"exit code {code}: killed by {name}",
                                         report.get("source", "launcher"), rank=rank, pid=pid, node=report.get("node")))
            elif code > 0:
                self.events.append(Event(EXITED, report.get("time"), None, f"exit code {code}",
                                         report.get("source", "launcher"), rank=rank, pid=pid, node=report.get("node")))
        for pid, parts in self.facts.terminated.items():
            if pid in seen:
                continue
            proc = self.facts.processes.get(pid)
            if proc is not None and proc.rank is not None:
                self.events.append(Event(TERMINATED, self.facts.glog_time(parts), "SIGTERM",
                                         "terminated by its launcher (SIGTERM) after another local process failed",
                                         "launcher", rank=proc.rank, pid=pid, node=proc.node))

    # ------------------------------------------------------------------ per rank
    def of(self, rank: int, kind: Optional[str] = None) -> List[Event]:
        evs = [e for e in self.events if e.rank == rank and (kind is None or e.kind == kind)]
        return sorted(evs, key=_when)

    def node_of(self, rank: int) -> Optional[str]:
        p = self.rank_proc.get(rank)
        if p is not None and (p.node or p.server):
            return p.node or p.server.split("%")[0]
        return next((e.node for e in self.of(rank) if e.node), None)

    def device_of(self, rank: int) -> Optional[int]:
        p = self.rank_proc.get(rank)
        if p is not None and p.device is not None:
            return p.device
        return next((e.device for e in self.of(rank) if e.device is not None), None)

    def rank_at(self, location: str) -> Optional[int]:
        """The rank HCCL's ``<address>/<device>`` names."""
        address, _, device = location.rpartition("/")
        for rank, p in self.rank_proc.items():
            server = (p.server or "").split("%")[0]
            if server == address and str(p.device) == device:
                return rank
        return None


def _when(e: Event) -> float:
    return e.time if e.time is not None else float("inf")


_OWN = object()  # "the event's own code"


def _merged(events: List[Event]) -> List[Event]:
    """One event per (rank, kind, code): the same failure read from several files (plog, the rank's stderr,
    the launcher's copy of it) keeps the most precise time and the most telling text."""
    groups: Dict[tuple, List[Event]] = {}
    for e in events:
        groups.setdefault((e.rank, e.kind, e.code), []).append(e)
    out = []
    for group in groups.values():
        precise = [e for e in group if e.time is not None and e.time % 1]
        timed = precise or [e for e in group if e.time is not None]
        first = min(timed, key=_when) if timed else group[0]
        told = next((e for e in group if _is_exception(e.text)), None)
        if told is not None and told is not first:
            first = Event(first.kind, first.time, first.code, told.text, told.source, first.rank, first.pid,
                          first.node or told.node, first.local_rank, first.device if first.device is not None
                          else told.device, {**told.detail, **first.detail})
        out.append(first)
    return sorted(out, key=_when)


def _is_exception(text: str) -> bool:
    head = text.split(":", 1)[0]
    return head.endswith(("Error", "Exception")) and " " not in head


def _root(job: _Job, e: Optional[Event], rank: int, cause: str, rule: str, code=_OWN, text=None) -> RootCause:
    return RootCause(rank, job.node_of(rank), job.device_of(rank), (e.code if e else None) if code is _OWN else code,
                     cause, text if text is not None else (e.text if e else ""), e.time if e else None,
                     e.source if e else None, rule)


def _inconsistent(job: _Job) -> Optional[RootCause]:
    reports = [e for e in job.events if e.kind == INCONSISTENT and e.detail.get("local") is not None]
    if not reports:
        return None
    local = {}
    for e in sorted(reports, key=_when):
        local.setdefault(e.rank, (e.detail.get("parameter"), e.detail["local"], e))
    votes = Counter(v[1] for v in local.values())
    if len(votes) < 2:
        remote = Counter(e.detail.get("remote") for e in reports)
        odd = remote.most_common(1)[0][0]
        candidates = [r for r, v in local.items() if v[1] == odd]
    else:
        least = min(votes.values())
        candidates = [r for r, v in local.items() if votes[v[1]] == least] if least < max(votes.values()) else []
    if not candidates:
        candidates = sorted(local)
    rank = min(candidates)
    parameter, value, event = local[rank]
    others = sorted({v[1] for r, v in local.items() if v[1] != value})
    root = _root(job, event, rank, "inconsistent", "mismatched collective (EI0005)", "EI0005",
                 f"rank {rank} issued a collective with {parameter} {value} where its peers used "
                 f"{', '.join(others) or 'another value'} (HCCL's argument check, EI0005)")
    root.suspects = sorted(candidates)
    return root


def diagnose(facts: JobFacts) -> Diagnosis:
    """The root cause and consequences of the job described by ``facts``."""
    job = _Job(facts)
    timeouts = [e for e in job.events if e.kind == TIMEOUT]
    first_timeout = min((_when(e) for e in timeouts), default=float("inf"))
    root = _inconsistent(job)
    note = ""
    if root is None:
        errors = sorted((e for e in job.events if e.kind == ERROR), key=_when)
        if errors and (_when(errors[0]) <= first_timeout or not timeouts):
            e = errors[0]
            root = _root(job, e, e.rank, "error", "first error before any timeout (ascend-fd 113)")
    if root is None:  # a rank that reported its own failure first and died after is a consequence
        failed = {e.rank for e in job.events if e.kind in (ERROR, TIMEOUT, INCONSISTENT)}
        killed = sorted((e for e in job.events if e.kind == KILLED and e.rank not in failed), key=_when)
        if killed and (_when(killed[0]) <= first_timeout or not timeouts):
            e = killed[0]
            root = _root(job, e, e.rank, "killed", "process killed by a signal its launcher did not send")
    if root is None and facts.claims:
        root = _claimed(job)
    if root is None and timeouts:
        root = _silent(job, first_timeout) or _late(job, timeouts)
        if root is None:
            note = ("every rank timed out within HCCL_EXEC_TIMEOUT of the others: they issued different "
                    "collectives (different control flow or data) or a link failed; no single rank is the cause "
                    "(ascend-fd 111)")
    if root is None and not timeouts:
        errors = sorted((e for e in job.events if e.kind in (EXITED, KILLED)), key=_when)
        if errors:
            e = errors[0]
            root = _root(job, e, e.rank, "exited", "first process to fail")
    consequences = _consequences(job, root)
    nodes = sorted({n for n in (job.node_of(r) for r in job.ranks) if n})
    return Diagnosis(job.ranks, nodes, facts.files, root, consequences, sorted(job.events, key=_when)[:40],
                     facts.exec_timeout, note, job.unattributed)


def _claimed(job: _Job) -> Optional[RootCause]:
    named: Dict[int, set] = {}
    kinds: Dict[int, str] = {}
    for (location, kind), (_arrival, discoverer) in job.facts.claims.items():
        rank = job.rank_at(location)
        if rank is None:
            continue
        named.setdefault(rank, set()).add(discoverer)
        if kinds.get(rank) != STUCK:
            kinds[rank] = kind
    if not named:
        return None
    terminated = {e.rank for e in job.events if e.kind == TERMINATED}
    rank = min(named, key=lambda r: (r in terminated, -len(named[r]), r))
    kind = kinds[rank]
    if kind == STUCK:
        text = (f"rank {rank} stopped entering collectives: its peers waited for it in the collective they timed "
                "out in (HCCL: Stuck Occurred) - it hung, or ran longer than HCCL_EXEC_TIMEOUT")
        root = _root(job, None, rank, "stuck", "named by HCCL's exception spreading", None, text)
    else:
        text = f"rank {rank}'s process exited or lost its network while its peers waited (HCCL: {HEARTBEAT_LOST})"
        root = _root(job, None, rank, "lost", "named by HCCL's exception spreading", None, text)
    root.suspects = sorted(named)
    return root


def _silent(job: _Job, first_timeout: float) -> Optional[RootCause]:
    reporting = {e.rank for e in job.events if e.kind in (TIMEOUT, ERROR, INCONSISTENT) and _when(e) <= first_timeout
                 + (job.facts.exec_timeout or 0) + 60}
    silent = [r for r in job.ranks if r not in reporting]
    if not silent or len(silent) == len(job.ranks):
        return None
    rank = silent[0]
    logs = "" if job.of(rank) or rank in job.rank_proc else " (no log of it was found: collect its node's logs)"
    root = _root(job, None, rank, "stuck", "never reached the collective the others timed out in (ascend-fd 112)",
                 None, f"rank {rank} never reached the collective its peers timed out in: it hung, died, or ran "
                       f"slower than HCCL_EXEC_TIMEOUT{logs}")
    root.suspects = silent
    return root


def _late(job: _Job, timeouts: List[Event]) -> Optional[RootCause]:
    first = {}
    for e in sorted(timeouts, key=_when):
        first.setdefault(e.rank, e)
    if len(first) < 2 or not job.facts.exec_timeout:
        return None
    ordered = sorted(first.values(), key=_when)
    spread = _when(ordered[-1]) - _when(ordered[0])
    if spread <= job.facts.exec_timeout:
        return None
    e = ordered[-1]
    return _root(job, e, e.rank, "late", "last to report the timeout, beyond HCCL_EXEC_TIMEOUT (ascend-fd 110)",
                 e.code, f"rank {e.rank} reported its timeout {spread:.0f} s after the first rank: it reached the "
                         "collective late (a long checkpoint save, evaluation or data stall on that rank)")


def _consequences(job: _Job, root: Optional[RootCause]) -> List[Consequence]:
    out = []
    for rank in job.ranks:
        if root is not None and rank == root.rank:
            continue
        evs = job.of(rank)
        if not evs:
            continue
        e = min(evs, key=lambda x: (_PRECEDENCE.index(x.kind), _when(x)))
        if e.kind == TIMEOUT:
            remote = e.detail.get("remote")
            how = "HCCL timeout" + (f" waiting for rank {remote}" if remote not in (None, "unknown") else "")
        elif e.kind == TERMINATED:
            how = "terminated by its launcher (SIGTERM) after another process on its node failed"
        elif e.kind == INCONSISTENT:
            how = f"saw the mismatched collective ({e.detail.get('parameter')} {e.detail.get('local')} here, " \
                  f"{e.detail.get('remote')} on a neighbour)"
        elif e.kind == KILLED:
            how = e.text
        elif e.kind == EXITED:
            how = f"exited ({e.text})"
        else:
            how = f"failed: {e.text}"
        out.append(Consequence(rank, job.node_of(rank), e.code, how, e.time))
    return out
