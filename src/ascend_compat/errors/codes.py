"""The generated numeric error-code table (``data/error_codes.json``) and its code families.

``lookup(code)`` returns the table rows for a number (ACL, runtime, GE, aclnn or HCCL), ``family_of``
classifies any number by its range, and ``nearest(code)`` lists the closest known codes of the same
family, for codes the table does not hold. The table is read once, lazily, via importlib.resources.
"""
from __future__ import annotations

import bisect
import json
from dataclasses import dataclass
from functools import lru_cache

#: family key -> (title, what codes of this family mean in general, what to do first)
FAMILIES: dict[str, tuple[str, str, str]] = {
    "hccl": (
        "HCCL result (HcclResult)",
        "a collective-communication (HCCL) call failed; small numbers are HcclResult values returned "
        "by Hccl* functions (all_reduce, broadcast, init of the communicator...)",
        "look for the EI/EJ code and the first failing rank in the logs of every rank",
    ),
    "acl_param": (
        "ACL parameter / usage error (1000xx, 1480xx)",
        "an ACL API rejected its arguments or was called in the wrong state (not initialised, "
        "wrong file, unsupported op/dtype/format for a single-operator call)",
        "check the values, dtypes and formats passed to the failing call; read the E-code printed next to it",
    ),
    "acl_resource": (
        "ACL resource error (2000xx)",
        "a resource (memory, device, feature) the ACL call needs is missing or does not match",
        "check device selection and memory use; read the plog for the failing call",
    ),
    "acl_storage": (
        "ACL storage error (3000xx)",
        "a storage limit on the host was exceeded",
        "free disk space (dump, profiling and log directories grow fast)",
    ),
    "acl_internal": (
        "ACL internal error (5000xx)",
        "an error inside CANN (ACL, graph engine, runtime or driver), usually a symptom of a broken or "
        "mismatched installation or of an earlier failure",
        "read the plog; check that driver, firmware, CANN and torch_npu versions match",
    ),
    "ge_param": ("Graph engine parameter error (145xxx)",
                 "the graph engine (GE) rejected a model/graph argument (path, id, shape, dtype, format)",
                 "check the graph inputs; this family appears with torchair/graph mode and offline models"),
    "ge_resource": ("Graph engine resource error (245xxx)",
                    "the graph engine could not allocate or operate on (device) memory",
                    "reduce memory use; check other processes on the card with npu-smi info"),
    "ge_storage": ("Graph engine execution error (345xxx)",
                   "graph execution reported a sub-health state, a user-raised exception or unaligned data",
                   "read the plog around the failing graph"),
    "ge_internal": ("Graph engine internal error (545xxx)",
                    "an internal graph-engine failure while loading or executing a model",
                    "read the plog; rebuild the graph/model with the installed CANN version"),
    "rt_param": (
        "Runtime parameter / context error (107xxx)",
        "the runtime rejected an argument or the call was made without the right device context "
        "(wrong device id, stream of another device, stream-capture misuse, timeouts)",
        "check device ids, that set_device ran in this thread/process, and stream/graph usage",
    ),
    "rt_resource": (
        "Runtime resource error (207xxx)",
        "the runtime ran out of, or may not use, a resource: device memory, streams, events, the device "
        "itself, permissions; also arithmetic overflow reports",
        "check memory and device availability (npu-smi info), permissions, and visible devices",
    ),
    "rt_internal": (
        "Runtime / device execution error (507xxx)",
        "a task failed while executing on the device (AI Core, vector core, AI CPU, DMA, HCCL tasks) "
        "or the runtime/driver failed internally; the reported op is often not the culprit because "
        "NPU execution is asynchronous",
        "rerun with ASCEND_LAUNCH_BLOCKING=1 to find the failing op, then read the plog",
    ),
    "aclnn_param": ("aclnn parameter error (161xxx)",
                    "an aclnn operator rejected its inputs (null tensor, unsupported dtype/shape/format)",
                    "check the dtypes and shapes passed to the op named in the message"),
    "aclnn_runtime": ("aclnn runtime error (361xxx)",
                      "an aclnn operator's call into the NPU runtime failed (often: op not supported on this SoC)",
                      "check that the op supports this chip; read the plog"),
    "aclnn_internal": (
        "aclnn internal error (561xxx)",
        "an aclnn operator failed internally: shape inference, tiling, or finding its kernel binary",
        "install the CANN ops/kernels package matching the toolkit; check dtype/shape support of the op",
    ),
    "unknown": ("Unknown code", "this number is not in any ACL, runtime, aclnn or HCCL range we know",
                "search the full log for an E-code (EZ9999, EE1001...) printed next to it"),
}


@dataclass(frozen=True)
class CodeEntry:
    """One row of the generated table."""

    code: int
    symbol: str
    family: str
    header: str
    label: str = ""


def family_of(code: int) -> str:
    """The family key (a key of ``FAMILIES``) of any numeric code, by range."""
    if 0 < code < 100:
        return "hccl"
    return {
        100: "acl_param", 148: "acl_param", 145: "ge_param", 200: "acl_resource", 245: "ge_resource",
        300: "acl_storage", 345: "ge_storage", 500: "acl_internal", 545: "ge_internal",
        107: "rt_param", 207: "rt_resource", 507: "rt_internal",
        161: "aclnn_param", 361: "aclnn_runtime", 561: "aclnn_internal",
    }.get(code // 1000, "unknown")


@lru_cache(maxsize=1)
def _table() -> dict:
    from importlib import resources

    text = resources.files("ascend_compat").joinpath("data", "error_codes.json").read_text("utf-8")
    return json.loads(text)


@lru_cache(maxsize=1)
def all_codes() -> tuple[CodeEntry, ...]:
    """Every row of the generated table, sorted by code."""
    fields = CodeEntry.__dataclass_fields__
    return tuple(CodeEntry(**{k: v for k, v in row.items() if k in fields}) for row in _table()["codes"])


def table_source() -> str:
    """The ``_source`` header of the generated table (which wheel it came from)."""
    return _table()["_source"]


def table_version() -> str:
    """The torch_npu version whose headers the table was generated from."""
    return str(_table().get("torch_npu_version", "?"))


def lookup(code: int) -> list[CodeEntry]:
    """Rows for ``code`` (usually one; a few numbers carry two symbols), empty if unknown."""
    return [e for e in all_codes() if e.code == code]


def nearest(code: int, n: int = 3) -> list[CodeEntry]:
    """Up to ``n`` known codes closest to ``code`` (for codes not in the table): of the same family,
    or of any family when the number is in no known range."""
    fam = family_of(code)
    same = [e for e in all_codes() if (fam == "unknown" or e.family == fam) and e.code != code]
    same.sort(key=lambda e: (abs(e.code - code), e.code))
    seen: list[CodeEntry] = []
    for e in same:
        if all(e.code != s.code for s in seen):
            seen.append(e)
        if len(seen) == n:
            break
    return sorted(seen, key=lambda e: e.code)


def known_numbers() -> list[int]:
    """Sorted distinct codes in the table."""
    return sorted({e.code for e in all_codes()})


def is_known(code: int) -> bool:
    nums = known_numbers()
    i = bisect.bisect_left(nums, code)
    return i < len(nums) and nums[i] == code
