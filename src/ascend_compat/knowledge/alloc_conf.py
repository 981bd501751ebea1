"""``PYTORCH_NPU_ALLOC_CONF``: the NPU caching allocator's settings, parsed once as torch_npu parses them.

Sources (Ascend/pytorch): ``torch_npu/csrc/core/npu/NPUCachingAllocator.cpp`` (``CachingAllocatorConfig``
up to torch_npu 2.9) and ``NPUAllocatorConfig.h/.cpp`` (2.10 on, which delegate the common keys to
c10's ``AcceleratorAllocatorConfig``). The grammar is the same in all: ``key:value`` pairs separated by
``,``; ``roundup_power2_divisions`` also takes ``[256:1,512:2,>:8]`` (interval boundaries in MiB);
spaces are dropped. Three eras differ in the keys they accept and in details:

* before 2.9: ``max_split_size_mb`` (must be > 20), ``garbage_collection_threshold``,
  ``expandable_segments``, ``base_addr_aligned_kb``, ``page_size``;
* 2.9: the same plus ``segment_size_mb`` and ``roundup_power2_divisions``;
* 2.10 on: c10's keys torch_npu supports (``max_split_size_mb`` >= 20, ``max_non_split_rounding_mb``,
  ``roundup_power2_divisions``, ``large_segment_size_mb``, pinned-memory keys...) plus torch_npu's own.

``max_split_size_mb``/``garbage_collection_threshold`` together with ``expandable_segments:True`` is an
error. :func:`parse` returns an :class:`AllocConf`; an invalid setting raises :class:`AllocConfError` with
torch_npu's message. The runtime shim (which keys a ``PYTORCH_CUDA_ALLOC_CONF`` may keep) and the
simulator's caching allocator both read this module.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Optional, Tuple

MiB = 1 << 20
K_LARGE_BUFFER = 20 * MiB  # kLargeBuffer: "large" allocations may be packed in 20 MiB blocks
ROUNDUP_INTERVALS = 16  # kRoundUpPowerOfTwoIntervals: 1 MiB .. 64 GiB
_NO_LIMIT = (1 << 64) - 1  # std::numeric_limits<size_t>::max()

_KEYS_OLD = ("max_split_size_mb", "garbage_collection_threshold", "expandable_segments", "base_addr_aligned_kb",
             "page_size")
_KEYS_29 = _KEYS_OLD + ("segment_size_mb", "roundup_power2_divisions")
_KEYS_NEW = ("max_split_size_mb", "garbage_collection_threshold", "roundup_power2_divisions", "expandable_segments",
             "pinned_use_background_threads", "large_segment_size_mb", "max_non_split_rounding_mb",
             "pinned_max_round_threshold_mb", "pinned_max_cached_size_mb",
             "pin_memory_expandable_segments", "pinned_mem_register", "base_addr_aligned_kb", "page_size",
             "segment_size_mb", "multi_stream_lazy_reclaim", "pinned_reserve_segment_size_mb",
             "per_process_memory_fraction", "release_lock_on_npumalloc", "throw_on_npumalloc_oom")

#: every key some torch_npu version accepts (what the shim may carry over from PYTORCH_CUDA_ALLOC_CONF)
ALL_KEYS = frozenset(_KEYS_NEW) | frozenset(_KEYS_29)
#: c10's own keys that torch_npu 2.10+ recognises but refuses ("torch_npu not support key")
_C10_ONLY = frozenset({"pinned_num_register_threads", "pinned_use_cuda_host_register", "pinned_use_hip_host_register",
                       "release_lock_on_cudamalloc", "release_lock_on_hipmalloc", "backend",
                       "graph_capture_record_stream_reuse", "pinned_reserve_segment_size_mb"}) - ALL_KEYS


class AllocConfError(ValueError):
    """``PYTORCH_NPU_ALLOC_CONF`` is invalid; the message is torch_npu's."""


@dataclasses.dataclass(frozen=True)
class AllocConf:
    """The allocator settings that change where memory goes (sizes in bytes; ``max_split_size`` is
    2**64-1 when unset, as in torch_npu)."""

    max_split_size: int = _NO_LIMIT
    max_non_split_rounding_size: int = K_LARGE_BUFFER
    garbage_collection_threshold: float = 0.0
    expandable_segments: bool = False
    roundup_power2_divisions: Tuple[int, ...] = (0,) * ROUNDUP_INTERVALS
    large_segment_size: int = K_LARGE_BUFFER
    base_addr_aligned_size: int = 16384
    page_size_1g: bool = False
    per_process_memory_fraction: float = 1.0
    era: str = "2.10"  # "old" (< 2.9), "2.9" or "2.10" (2.10 and later)

    @property
    def split_limited(self) -> bool:
        return self.max_split_size != _NO_LIMIT

    def divisions(self, size: int) -> int:
        """``roundup_power2_divisions(size)``: the divisions of the power-of-two interval ``size`` lies in."""
        log_size = size.bit_length() - 1
        index = min(max(0, log_size - 20), ROUNDUP_INTERVALS - 1)
        return self.roundup_power2_divisions[index]


def era(torch_npu_version: Optional[str]) -> str:
    """The parser era of a torch_npu version (None = the newest)."""
    if not torch_npu_version:
        return "2.10"
    from ascend_compat._versions import parse as parse_version

    v = parse_version(torch_npu_version)
    if (v.major, v.minor) < (2, 9):
        return "old"
    return "2.9" if (v.major, v.minor) == (2, 9) else "2.10"


def keys(era_name: str = "2.10") -> frozenset:
    """The keys torch_npu of ``era_name`` accepts."""
    return frozenset({"old": _KEYS_OLD, "2.9": _KEYS_29}.get(era_name, _KEYS_NEW))


def _lex(text: str) -> list:
    out, buf = [], []
    for ch in text:
        if ch in ",:[]":
            if buf:
                out.append("".join(buf))
                buf = []
            out.append(ch)
        elif ch != " ":
            buf.append(ch)
    if buf:
        out.append("".join(buf))
    return out


def _int(token: str, key: str) -> int:
    if not token.isdigit():
        raise AllocConfError(f"CachingAllocator option {key} is invalid: {token!r} is not a whole number")
    return int(token)


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def parse(text: Optional[str], torch_npu_version: Optional[str] = None) -> AllocConf:
    """Parse a ``PYTORCH_NPU_ALLOC_CONF`` value as torch_npu ``torch_npu_version`` does."""
    name = era(torch_npu_version)
    if not text:
        return AllocConf(era=name)
    allowed = keys(name)
    tok = _lex(text)
    values: dict = {}
    i = 0

    def expect(j: int, ch: str) -> None:
        if j >= len(tok) or tok[j] != ch:
            raise AllocConfError(f"Error parsing CachingAllocator settings, expected {ch}")

    def value(j: int, key: str) -> str:
        if j >= len(tok):
            raise AllocConfError(f"Error, expecting {key} value")
        return tok[j]

    while i < len(tok):
        key = tok[i]
        if key not in allowed:
            if name == "2.10":
                known = key in _C10_ONLY
                raise AllocConfError(f"torch_npu not support key '{key}' in NPU allocator config, " if known
                                     else f"Unrecognized key '{key}' in NPU allocator config, ")
            raise AllocConfError(f"Unrecognized CachingAllocator option: {key}")
        expect(i + 1, ":")
        i += 2
        if key == "roundup_power2_divisions":
            i, values[key] = _parse_divisions(tok, i)
        else:
            raw = value(i, key)
            values[key] = _parse_value(key, raw, name)
        if i + 1 < len(tok):
            expect(i + 1, ",")
            i += 1
        i += 1
    conf = AllocConf(era=name, **{_FIELD[k]: v for k, v in values.items() if k in _FIELD})
    if "segment_size_mb" in values and "large_segment_size_mb" not in values:
        conf = dataclasses.replace(conf, large_segment_size=values["segment_size_mb"])
    if conf.expandable_segments and (conf.split_limited or conf.garbage_collection_threshold):
        raise AllocConfError("`max_split_size_mb` or `garbage_collection_threshold`, cannot be enabled with "
                             "`expandable_segments`, please set `expandable_segments` to `False`.")
    return conf


_FIELD = {"max_split_size_mb": "max_split_size", "max_non_split_rounding_mb": "max_non_split_rounding_size",
          "garbage_collection_threshold": "garbage_collection_threshold",
          "expandable_segments": "expandable_segments", "roundup_power2_divisions": "roundup_power2_divisions",
          "large_segment_size_mb": "large_segment_size", "base_addr_aligned_kb": "base_addr_aligned_size",
          "page_size": "page_size_1g", "per_process_memory_fraction": "per_process_memory_fraction"}

_BOOL_KEYS = ("expandable_segments", "pinned_use_background_threads", "pin_memory_expandable_segments",
              "pinned_mem_register", "multi_stream_lazy_reclaim", "release_lock_on_npumalloc",
              "throw_on_npumalloc_oom")


def _parse_value(key: str, raw: str, name: str):
    if key in _BOOL_KEYS:
        if raw not in ("True", "False"):
            raise AllocConfError(f"Expected a single True/False argument for {key}")
        return raw == "True"
    if key in ("max_split_size_mb", "max_non_split_rounding_mb"):
        mb = _int(raw, key)
        if name == "2.10" or key == "max_non_split_rounding_mb":
            if mb < 20:
                raise AllocConfError(f"CachingAllocator option {key} too small, must be >= 20")
        elif mb <= 20:
            raise AllocConfError("CachingAllocator option max_split_size_mb too small, must be > 20")
        return min(mb, _NO_LIMIT // MiB) * MiB
    if key == "garbage_collection_threshold":
        try:
            v = float(raw)
        except ValueError:
            raise AllocConfError(f"garbage_collection_threshold {raw!r} is not a number") from None
        if not 0.0 < v < 1.0:
            raise AllocConfError("garbage_collect_threshold is invalid, set it in (0.0, 1.0)")
        return v
    if key in ("segment_size_mb", "large_segment_size_mb"):
        mb = _int(raw, key)
        if key == "segment_size_mb" and not 20 <= mb <= 512:
            raise AllocConfError("CachingAllocator option segment_size_mb error, must be [20, 512], dtype is int")
        return mb * MiB
    if key == "base_addr_aligned_kb":
        kb = _int(raw, key)
        if kb > 16:
            raise AllocConfError("CachingAllocator option base_addr_aligned_kb error, must be [0~16], dtype is int")
        return kb * 1024
    if key == "page_size":
        if raw != "1g":
            raise AllocConfError(f"Unsupported page_size value: {raw}")
        return True
    if key == "per_process_memory_fraction":
        v = float(raw)
        if not 0.0 <= v <= 1.0:
            raise AllocConfError("per_process_memory_fraction is invalid, set it in [0.0, 1.0]")
        return v
    return raw  # pinned-memory sizes and the like: accepted, no effect on device memory


def _parse_divisions(tok: list, i: int):
    """``roundup_power2_divisions`` from token ``i``: one power of two for every interval, or a bracketed
    list of ``boundary_mb:divisions`` (``>`` = all intervals after the last boundary)."""
    divs = [0] * ROUNDUP_INTERVALS
    if i >= len(tok):
        raise AllocConfError("Error, expecting roundup_power2_divisions value")
    if tok[i] != "[":
        v = _int(tok[i], "roundup_power2_divisions")
        if v and not _is_pow2(v):
            raise AllocConfError("For roundups, the divisions has to be power of 2 or 0 to disable roundup ")
        return i, tuple([v] * ROUNDUP_INTERVALS)
    first, last = True, 0
    i += 1
    while i < len(tok) and tok[i] != "]":
        bound = tok[i]
        if i + 2 >= len(tok) or tok[i + 1] != ":":
            raise AllocConfError("Error parsing roundup_power2_divisions value")
        v = _int(tok[i + 2], "roundup_power2_divisions")
        if v and not _is_pow2(v):
            raise AllocConfError("For roundups, the divisions has to be power of 2 or 0 to disable roundup ")
        if bound == ">":
            divs[last + 1:] = [v] * (ROUNDUP_INTERVALS - last - 1)
        else:
            b = _int(bound, "roundup_power2_divisions")
            if not _is_pow2(b):
                raise AllocConfError("For roundups, the intervals have to be power of 2 ")
            index = min(b.bit_length() - 1, ROUNDUP_INTERVALS - 1)
            if first:
                divs[:index] = [v] * index
                first = False
            divs[index] = v
            last = index
        i += 3
        if i < len(tok) and tok[i] == ",":
            i += 1
    if i >= len(tok):
        raise AllocConfError("Expected closing bracket ']' while parsing roundup_power2_divisions")
    return i, tuple(divs)


def from_env(torch_npu_version: Optional[str] = None, environ=None) -> AllocConf:
    """The settings of ``PYTORCH_NPU_ALLOC_CONF`` (or ``PYTORCH_ALLOC_CONF`` from 2.10 on; both set is an
    error there, as in torch_npu)."""
    env = os.environ if environ is None else environ
    npu, acc = env.get("PYTORCH_NPU_ALLOC_CONF"), env.get("PYTORCH_ALLOC_CONF")
    if era(torch_npu_version) == "2.10":
        if npu is not None and acc is not None:
            raise AllocConfError("Both PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF have been set, "
                                 "please set only one of them.")
        return parse(npu if npu is not None else acc, torch_npu_version)
    return parse(npu, torch_npu_version)
