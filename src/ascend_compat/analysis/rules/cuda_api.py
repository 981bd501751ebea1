"""NPU status of ``torch.cuda`` names (a helper of the rules, not a rule), read from the generated table in :mod:`ascend_compat.data`.

The table itself is generated data (``ascend_compat.data.cuda_api_map(torch_npu_version)``); this
module only adapts it to what the scanner needs and adds the semantic notes that are not in any
table (which rule a name belongs to). If the data module is missing, every name is treated as
mapped by the shim with an explicit "status unknown" note, so ``check`` still works.
"""
from __future__ import annotations

import functools
from typing import NamedTuple, Optional

from ascend_compat.analysis.rules import device_capability
from ascend_compat.analysis.rules.base import AUTO, MANUAL, PARTIAL
from ascend_compat.knowledge import cuda_names as shim_table


class ApiStatus(NamedTuple):
    rule: str
    handling: str
    npu_name: Optional[str]  # e.g. "torch.npu.synchronize"; None = no counterpart
    note: str


# Semantic groups (hand-written knowledge: these decide the rule, not whether torch_npu has the name).
_AMP = {"amp"}
_GRAPHS = {"CUDAGraph", "graph", "graphs", "make_graphed_callables", "graph_pool_handle",
           "is_current_stream_capturing"}
_CAPABILITY = {"get_device_capability", "get_device_properties", "get_arch_list", "get_gencode_flags"}
_LEGACY_TYPES = set(shim_table.LEGACY_TENSOR_TYPES)
_RENAMED = shim_table.RENAMED


def _load_table(version: Optional[str]):
    try:
        from ascend_compat import data
        return data.cuda_api_map(version)
    except (ImportError, AttributeError, FileNotFoundError, KeyError, ValueError, OSError):
        return None


def _entry(table, name: str):
    """(known, torch.npu name or None, note) for a dotted torch.cuda name."""
    if table is None:
        return False, None, ""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        row = table.get(key)
        if row is None:
            continue
        if row.get("status") == "unsupported" or not row.get("npu_name"):
            return True, None, row.get("note") or ""
        rest = ".".join(parts[n:])
        return True, "torch.npu." + row["npu_name"] + ("." + rest if rest else ""), row.get("note") or ""
    # not in torch.cuda's public API of the tabled version: private, misspelt, or newer than the table
    return True, None, "not a public torch.cuda name in torch_npu's API table for this version"


@functools.lru_cache(maxsize=8)
def _table(version: Optional[str]):
    return _load_table(version)


def status(name: str, version: Optional[str] = None) -> ApiStatus:
    """Status of ``torch.cuda.<name>`` (``name`` may be dotted: ``amp.autocast``, ``nvtx.range``)."""
    head = name.split(".", 1)[0]
    known, npu, note = _entry(_table(version), name)
    if not known:
        npu = "torch.npu." + _RENAMED.get(head, head) + name[len(head):]
        note = "NPU status not verified (ascend_compat.data.cuda_api_map unavailable)"
    shim = shim_table.status(head)
    if shim is not None and shim[0] in (shim_table.EMULATE, shim_table.KEEP) and npu is None:
        # torch_npu lacks it, but the shim answers it itself: it runs, differently
        return ApiStatus(_rule_of(head), PARTIAL, None, shim[1] or note)
    if shim is not None and shim[0] == shim_table.UNSUPPORTED:
        return ApiStatus(_rule_of(head), MANUAL, None, note or shim[1] or "")
    if head in _AMP:
        return ApiStatus("cuda-amp", AUTO if npu else MANUAL, npu, note)
    if head in _GRAPHS:
        return ApiStatus("cuda-graph", PARTIAL if npu else MANUAL, npu,
                         note or "NPUGraph supports inference capture only")
    if head in _CAPABILITY:
        return ApiStatus("device-capability", PARTIAL if npu else MANUAL, npu, note)
    if head == "DoubleTensor":
        return ApiStatus("float64", PARTIAL, npu,
                         "float64 tensors on NPU: the shim's policy turns them into float32")
    if head in _LEGACY_TYPES:
        return ApiStatus("legacy-tensor-type", AUTO if npu else MANUAL, npu, note)
    if head == "nvtx":
        return ApiStatus("torch-cuda-api", PARTIAL, npu or "torch.npu.mstx",
                         note or "NVTX ranges map to mstx markers; NVIDIA profilers do not see them")
    if head == "cudart" and npu:
        return ApiStatus("torch-cuda-api", PARTIAL, npu,
                         note or "torch.npu.npurt() exposes the NPU runtime, not the CUDA runtime API")
    if npu is None:
        return ApiStatus("torch-cuda-api", MANUAL, None,
                         note or "torch_npu has no counterpart; the shim raises an error naming it")
    return ApiStatus("torch-cuda-api", AUTO, npu, note)


def _rule_of(head: str) -> str:
    if head in _CAPABILITY:
        return "device-capability"
    if head in _GRAPHS:
        return "cuda-graph"
    return "cuda-amp" if head in _AMP else "torch-cuda-api"


def has_npu_counterpart(name: str, version: Optional[str] = None) -> Optional[str]:
    """The ``torch.npu`` form of ``torch.cuda.<name>`` when torch_npu has it, else None.

    Used by migrate: a rewrite happens only when the table confirms the name (unknown = no rewrite).
    """
    st = status(name, version)
    if st.npu_name is None or st.note.startswith("NPU status not verified"):
        return None
    return st.npu_name


@functools.lru_cache(maxsize=4096)
def classify_torch_cuda(q: str, version: Optional[str] = None):
    """(rule, handling, message, suggestion) of ``torch.cuda`` or a ``torch.cuda.*`` name."""
    name = q[len("torch.cuda."):] if q != "torch.cuda" else ""
    if not name:
        return ("torch-cuda-api", AUTO, "torch.cuda module used as a value",
                "use torch.npu (torch_npu) or torch.get_device_module()")
    st = status(name, version)
    # a note phrased as advice ("prefer X", "use X") is the suggestion, not part of the message
    advice = st.note.startswith(("prefer ", "use "))
    msg = f"torch.cuda.{name}"
    if st.note and not advice:
        msg += f": {st.note}"
    elif st.npu_name is None:
        msg += ": torch_npu has no counterpart"
    if advice:
        sugg = "use " + st.note.split(" ", 1)[1]
    elif st.rule == "device-capability":
        sugg = device_capability.RULE.suggestion
    elif st.npu_name:
        sugg = f"use {st.npu_name}"
    else:
        sugg = "remove it, or guard it with a check that the device is CUDA"
    return st.rule, st.handling, msg, sugg


def npu_chain(dotted: str, version: Optional[str] = None) -> Optional[str]:
    """migrate's rewrite of a ``torch.cuda.X`` chain: ``torch.npu.X`` when torch_npu has X, else None."""
    if not dotted.startswith("torch.cuda."):
        return None
    return has_npu_counterpart(dotted[len("torch.cuda."):], version)
