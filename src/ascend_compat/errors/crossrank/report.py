"""A cross-rank :class:`~ascend_compat.errors.crossrank.chain.Diagnosis` as text or JSON-ready data."""
from __future__ import annotations

import os
import time
from typing import Optional

from ascend_compat.errors.crossrank.chain import Diagnosis, RootCause

#: what to do about a root cause that has no error code of its own
CAUSE_ADVICE = {
    "stuck": ("the rank stopped issuing collectives: a hang (dead-lock, a stuck data loader, a device task that "
              "never ends) or work longer than HCCL_EXEC_TIMEOUT on that rank only",
              ["find what that rank was doing: py-spy dump --pid <pid> on a live job, or its last log lines",
               "make every rank issue the same collectives in the same order (no rank-dependent branches around "
               "them)",
               "raise HCCL_EXEC_TIMEOUT only if the work is legitimately long (checkpoint saving, evaluation on "
               "one rank)"]),
    "lost": ("the rank's process exited (crash, OOM kill, node failure) or its network went down while the others "
             "waited",
             ["read that rank's own log and the node's kernel log (dmesg: OOM killer) for why it ended",
              "check the node's network (hccn_tool link status) if the process was still alive"]),
    "killed": ("the process was killed by a signal its launcher did not send: SIGKILL usually comes from the kernel's "
               "OOM killer or the job scheduler",
               ["check the node's kernel log (dmesg | grep -i kill) and its host memory use",
                "lower host memory use (DataLoader workers, pinned memory, dataset caching) or give the job more"]),
    "inconsistent": ("ranks issued the same collective with different arguments (element count, dtype, or a "
                     "different collective altogether)",
                     ["make the tensor sizes of each collective equal on every rank (pad uneven batches; no "
                      "rank-dependent shapes)", "check the ranks run the same code and the same data sharding"]),
    "late": ("one rank reached the collective long after the others, beyond HCCL_EXEC_TIMEOUT",
             ["find the long step on that rank (checkpoint saving, evaluation, logging on rank 0)",
              "raise HCCL_EXEC_TIMEOUT above that step's duration, or make the other ranks wait in a barrier"]),
    "exited": ("the process ended with an error",
               ["read that rank's own output (its stderr) for the traceback"]),
}


def _explain(root: RootCause) -> tuple[str, list, str]:
    """(meaning, fixes, title) for the root cause."""
    from ascend_compat.errors.explain import explain

    if root.code and root.code[0].isdigit() or (root.code or "").startswith(("E", "hccl:")):
        try:
            ex = explain(root.code)
            return ex.meaning, list(ex.fixes), ex.title
        except ValueError:
            pass
    meaning, fixes = CAUSE_ADVICE.get(root.cause, ("", []))
    return meaning, fixes, root.cause


def _clock(when: Optional[float]) -> str:
    if when is None:
        return "?"
    return time.strftime("%H:%M:%S", time.localtime(when)) + f".{int((when % 1) * 1000):03d}"


def to_dict(d: Diagnosis) -> dict:
    root = None
    if d.root is not None:
        meaning, fixes, title = _explain(d.root)
        root = {"rank": d.root.rank, "node": d.root.node, "device": d.root.device, "code": d.root.code,
                "cause": d.root.cause, "first_error": d.root.first_error, "time": d.root.time,
                "log": d.root.source, "rule": d.root.rule, "suspects": d.root.suspects, "title": title,
                "meaning": meaning, "fixes": fixes}
    return {"ranks": d.ranks, "nodes": d.nodes, "files": d.files, "exec_timeout": d.exec_timeout,
            "root_cause": root,
            "consequences": [{"rank": c.rank, "node": c.node, "code": c.code, "how": c.how, "time": c.time}
                             for c in d.consequences],
            "timeline": [{"time": e.time, "rank": e.rank, "node": e.node, "kind": e.kind, "code": e.code,
                          "text": e.text} for e in d.timeline],
            "note": d.note, "unattributed_events": d.unattributed}


def to_text(d: Diagnosis, where: str = "") -> str:
    lines = [f"cross-rank diagnosis of {d.files} log file(s){' in ' + where if where else ''}: "
             f"{len(d.ranks)} rank(s) on {len(d.nodes) or '?'} node(s)" + (f" ({', '.join(d.nodes)})" if d.nodes else "")]
    r = d.root
    if r is None:
        lines.append("no root cause found" + (f": {d.note}" if d.note else ": no rank reported an error"))
    else:
        meaning, fixes, title = _explain(r)
        place = ", ".join(x for x in (f"node {r.node}" if r.node else "", f"device {r.device}" if r.device is not None
                                      else "") if x)
        lines.append(f"root cause: rank {r.rank}" + (f" ({place})" if place else ""))
        lines.append(f"  what:      {r.first_error}")
        if r.code:
            lines.append(f"  code:      {r.code}  {title}")
        if r.time is not None:
            lines.append(f"  when:      {_clock(r.time)}" + (f"  ({os.path.basename(r.source)})" if r.source
                                                             and os.sep in r.source else ""))
        if meaning:
            lines.append(f"  meaning:   {meaning}")
        for i, fix in enumerate(fixes):
            lines.append(f"  {'fix:' if i == 0 else '':<10} - {fix}")
        if len(r.suspects) > 1:
            lines.append(f"  also named: rank(s) {', '.join(str(s) for s in r.suspects if s != r.rank)}")
        lines.append(f"  found by:  {r.rule}")
    if d.consequences:
        who = f"rank {r.rank}" if r is not None else "it"
        lines.append(f"consequences: {len(d.consequences)} rank(s) failed because of {who}")
        for c in d.consequences:
            code = f" [{c.code}]" if c.code else ""
            lines.append(f"  rank {c.rank}" + (f" ({c.node})" if c.node else "") + f": {c.how}{code}"
                         + (f" at {_clock(c.time)}" if c.time is not None else ""))
    if d.timeline:
        lines.append("time line:")
        for e in d.timeline[:12]:
            lines.append(f"  {_clock(e.time):<13} rank {e.rank:<3} {e.kind:<12} {e.code or '':<8} {e.text[:90]}")
    if d.exec_timeout is not None:
        lines.append(f"HCCL_EXEC_TIMEOUT in the logs: {d.exec_timeout} s")
    if d.unattributed:
        lines.append(f"{d.unattributed} error report(s) could not be tied to a rank (no communicator line, rank "
                     "prefix or torchrun report names their process)")
    return "\n".join(lines)
