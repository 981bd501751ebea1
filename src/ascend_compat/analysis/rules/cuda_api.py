"""NPU status of ``torch.cuda`` names (a helper of the rules, not a rule).

A name with a knowledge record (:mod:`ascend_compat.knowledge.cuda_names`) gets the record's rule,
verdict, counterpart, reason and advice; where the record's torch_npu range excludes the targeted
torch_npu version, a ``map`` name is manual (the shim raises an error naming it). Dotted members of
a recorded name (``amp.autocast``, ``nvtx.range_push``) take the record's rule and verdict, with the
member's counterpart and note from the generated API table
(``ascend_compat.data.cuda_api_map(torch_npu_version)``), which also answers for names without a
record (newer than the records). Every advice text is one sentence ending with a full stop.
"""
from __future__ import annotations

import functools
from typing import NamedTuple, Optional

from ascend_compat import data
from ascend_compat.analysis.rules.base import AUTO, MANUAL
from ascend_compat.knowledge import cuda_names as records
from ascend_compat.knowledge.records import EMULATE, MAP

_API = "torch-cuda-api"
_NO_COUNTERPART = "torch_npu has no counterpart; the shim raises an error naming it"
_GUARD = "remove it, or guard it with a check that the device is CUDA."


class ApiStatus(NamedTuple):
    rule: str
    handling: str
    npu_name: Optional[str]  # e.g. "torch.npu.synchronize"; None = no counterpart
    note: str  # what happens on Ascend ("" when there is nothing to add)
    advice: str  # one sentence


def _entry(table, name: str):
    """(torch.npu name or None, note) for a dotted torch.cuda name."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        row = table.get(".".join(parts[:n]))
        if row is None:
            continue
        if row.get("status") == "unsupported" or not row.get("npu_name"):
            return None, row.get("note") or ""
        rest = ".".join(parts[n:])
        return "torch.npu." + row["npu_name"] + ("." + rest if rest else ""), row.get("note") or ""
    # not in torch.cuda's public API of the tabled version: private, misspelt, or newer than the table
    return None, "not a public torch.cuda name in torch_npu's API table for this version"


@functools.lru_cache(maxsize=8)
def _table(version: Optional[str]):
    return data.cuda_api_map(version)


def _sentence(text: str) -> str:
    return text if text.endswith(".") else text + "."


def status(name: str, version: Optional[str] = None) -> ApiStatus:
    """Status of ``torch.cuda.<name>`` (``name`` may be dotted: ``amp.autocast``, ``nvtx.range``)."""
    head = name.split(".", 1)[0]
    rec = records.status(head)
    if rec is not None and "." not in name:
        return _of_record(rec, version)
    member = records.status(name.split(".", 1)[1]) if rec is not None and rec.action == records.KEEP else None
    if member is not None:  # torch.cuda.memory.empty_cache is torch.cuda.empty_cache (the shim rebinds both)
        return _of_record(member, version)
    npu, note = _entry(_table(version), name)
    # a note phrased as advice ("prefer X", "use X") is the advice, not part of the message; a member of a
    # recorded name (torch.cuda.amp.GradScaler) is advised as migrate rewrites it (torch.npu.amp.GradScaler)
    advice = "use " + _sentence(note.split(" ", 1)[1]) if note.startswith(("prefer ", "use ")) else None
    if advice:
        note = ""
        if rec is not None and npu is not None:
            advice = None
    if rec is not None and rec.verdict == MANUAL:
        return ApiStatus(rec.rule, MANUAL, None, note or rec.reason, advice or rec.advice)
    if npu is None and (rec is None or rec.action != EMULATE):
        return ApiStatus(rec.rule if rec else _API, MANUAL, None, note or _NO_COUNTERPART, advice or _GUARD)
    if rec is None:
        return ApiStatus(_API, AUTO, npu, note, advice or f"use {npu}.")
    npu = npu or rec.counterpart
    if rec.verdict == AUTO:
        return ApiStatus(rec.rule, AUTO, npu, note, advice or f"use {npu}.")
    return ApiStatus(rec.rule, rec.verdict, npu, note or rec.reason, advice or rec.advice)


def _of_record(rec, version: Optional[str]) -> ApiStatus:
    if version is not None and rec.action == MAP and not rec.versions.applies(torch_npu=version):
        return ApiStatus(rec.rule, MANUAL, None, f"torch_npu {version} has no {rec.counterpart}; the shim raises "
                         "an error naming it", f"upgrade torch_npu ({rec.versions.torch_npu}) to use {rec.counterpart}.")
    return ApiStatus(rec.rule, rec.verdict, rec.counterpart, "" if rec.verdict == AUTO else rec.reason, rec.advice)


def has_npu_counterpart(name: str, version: Optional[str] = None) -> Optional[str]:
    """The ``torch.npu`` form of ``torch.cuda.<name>`` migrate writes, or None (no rewrite).

    A recorded name: its record's ``rewrite`` (where the targeted torch_npu has it); a dotted member
    or a name without a record: the generated API table's counterpart."""
    rec = records.status(name)
    if rec is not None:
        if rec.rewrite is None or _of_record(rec, version).handling == MANUAL:
            return None
        return rec.rewrite[1]
    return status(name, version).npu_name


@functools.lru_cache(maxsize=4096)
def classify_torch_cuda(q: str, version: Optional[str] = None):
    """(rule, handling, message, suggestion) of ``torch.cuda`` or a ``torch.cuda.*`` name."""
    name = q[len("torch.cuda."):] if q != "torch.cuda" else ""
    if not name:
        return (_API, AUTO, "torch.cuda module used as a value",
                "use torch.npu (torch_npu) or torch.get_device_module().")
    st = status(name, version)
    msg = f"torch.cuda.{name}: {st.note}" if st.note else f"torch.cuda.{name}"
    return st.rule, st.handling, msg, st.advice


def npu_chain(dotted: str, version: Optional[str] = None) -> Optional[str]:
    """migrate's rewrite of a ``torch.cuda.X`` chain: ``torch.npu.X`` when torch_npu has X, else None."""
    if not dotted.startswith("torch.cuda."):
        return None
    return has_npu_counterpart(dotted[len("torch.cuda."):], version)
