"""Memory functions of the simulated ``torch.npu``, backed by the simulator's caching-allocator model.

Every device storage is a block of torch_npu's caching allocator as modelled in
``simulator.caching_allocator`` (2 MiB small and 20 MiB large segments, splitting, the
``PYTORCH_NPU_ALLOC_CONF`` options), so ``memory_reserved``, ``memory_stats``, ``memory_summary``,
``memory_snapshot``, ``empty_cache`` and an OOM behave as on Ascend. The device "total" that ``mem_get_info`` and
``get_device_properties().total_memory`` report is ``install(memory_capacity=...)`` when given,
else the SoC's HBM size (62432 MiB on a 64 GB Ascend910B3). Allocation is only limited when a
capacity or a ``set_per_process_memory_fraction`` is set; then the simulator raises
``torch.OutOfMemoryError`` in torch_npu's wording.
"""
from __future__ import annotations

import collections
import contextlib
import itertools
import threading
import warnings
from typing import Any, Dict, List

import torch

from . import device as _dev
from ._errors import pta_error, unsupported


def _mem():
    from ascend_compat.simulator import _memory

    return _memory


def _index(device: Any) -> int:
    """The device index of ``device`` (None = current), checked against the simulated devices."""
    if device is None:
        return _dev.current_device()
    return _dev._state().check_index(_dev._get_device_index(device, optional=True))


base_capacity = _dev.base_capacity


# ---------------------------------------------------------------------------- statistics


def memory_stats(device: Any = None) -> "collections.OrderedDict[str, int]":
    """torch.cuda-style allocator statistics (flat keys such as ``allocated_bytes.all.current``), sorted."""
    idx = _index(device)
    stats = _mem().memory_stats(idx)
    return collections.OrderedDict(sorted(stats.items()))


def memory_stats_as_nested_dict(device: Any = None) -> Dict[str, Any]:
    """The same statistics nested on the dots: ``{"allocated_bytes": {"all": {"current": ...}}}``."""
    nested: Dict[str, Any] = {}
    for key, value in memory_stats(device).items():
        node = nested
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return nested


def reset_accumulated_memory_stats(device: Any = None) -> None:
    _mem().reset_accumulated_memory_stats(_index(device))


def reset_peak_memory_stats(device: Any = None) -> None:
    _mem().reset_peak_memory_stats(_index(device))


def reset_max_memory_allocated(device: Any = None) -> None:
    warnings.warn(
        "torch_npu.npu.reset_max_memory_allocated now calls torch_npu.npu.reset_peak_memory_stats, "
        "which resets /all/ peak memory stats.",
        FutureWarning,
    )
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device: Any = None) -> None:
    warnings.warn(
        "torch_npu.npu.reset_max_memory_cached now calls torch_npu.npu.reset_peak_memory_stats, "
        "which resets /all/ peak memory stats.",
        FutureWarning,
    )
    reset_peak_memory_stats(device)


def memory_allocated(device: Any = None) -> int:
    """Bytes currently held by live npu storages on the device."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device: Any = None) -> int:
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device: Any = None) -> int:
    stats = memory_stats(device)
    return stats.get("reserved_bytes.all.current", stats.get("allocated_bytes.all.current", 0))


def max_memory_reserved(device: Any = None) -> int:
    stats = memory_stats(device)
    return stats.get("reserved_bytes.all.peak", stats.get("allocated_bytes.all.peak", 0))


def memory_cached(device: Any = None) -> int:
    warnings.warn("torch_npu.npu.memory_cached has been renamed to torch_npu.npu.memory_reserved", FutureWarning)
    return memory_reserved(device)


def max_memory_cached(device: Any = None) -> int:
    warnings.warn(
        "torch_npu.npu.max_memory_cached has been renamed to torch_npu.npu.max_memory_reserved", FutureWarning
    )
    return max_memory_reserved(device)


def mem_get_info(device: Any = None):
    """``(free, total)`` bytes: total is the device capacity, free is total minus reserved memory.
    An invalid device raises AssertionError("Invalid device id"), as torch_npu's does."""
    idx = _dev.current_device() if device is None else _dev._get_device_index(device, optional=True)
    _dev._check_valid(idx)
    _dev._lazy_init()
    total = base_capacity(idx)
    return max(total - memory_reserved(idx), 0), total


# ---------------------------------------------------------------------------- limits


_fractions: Dict[int, float] = {}


def get_per_process_memory_fraction(device: Any = None) -> float:
    """The fraction of the device's memory this process may allocate (1.0 unless set)."""
    _dev._lazy_init()
    return _fractions.get(_index(device), 1.0)


def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
    """Limit allocations on the device to ``fraction * total``; beyond it allocation raises OutOfMemoryError."""
    _dev._lazy_init()
    idx = _index(device)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`" + pta_error("TYPE"))
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1" + pta_error("VALUE"))
    _fractions[idx] = fraction
    _mem().allocator(idx).device_total = base_capacity(idx)
    _mem().set_allowed(idx, int(base_capacity(idx) * fraction))


def empty_cache() -> None:
    """Release the cached segments that are wholly free, on every device (torch_npu empties all)."""
    for idx in range(_dev.device_count()):
        _mem().empty_cache(idx)


def empty_virt_addr_cache() -> None:
    return None


# ---------------------------------------------------------------------------- raw allocations

_raw_blocks: Dict[int, torch.Tensor] = {}
_raw_lock = threading.Lock()


def caching_allocator_alloc(size: int, device: Any = None, stream: Any = None) -> int:
    """Allocate ``size`` bytes of device memory; returns its address (free with ``caching_allocator_delete``)."""
    from .streams import Stream, current_stream

    idx = _index(device)
    if stream is None:
        stream = current_stream(idx)
    if isinstance(stream, Stream):
        stream = stream.npu_stream
    if not isinstance(stream, int):
        raise TypeError(
            "Invalid type for stream argument, must be `torch_npu.npu.Stream` or `int` representing a pointer "
            "to a existing stream" + pta_error("TYPE")
        )
    block = torch.empty(int(size), dtype=torch.uint8, device=torch.device("npu", idx))
    ptr = block.data_ptr()
    with _raw_lock:
        _raw_blocks[ptr] = block
    return ptr


def caching_allocator_delete(mem_ptr: int) -> None:
    """Free memory returned by ``caching_allocator_alloc``."""
    with _raw_lock:
        block = _raw_blocks.pop(int(mem_ptr), None)
    if block is None:
        raise RuntimeError(f"invalid device pointer: {mem_ptr:#x}" + pta_error("VALUE"))
    del block


# ---------------------------------------------------------------------------- reports


def memory_snapshot(mempool_id: Any = None) -> List[Dict[str, Any]]:
    """The segments of every device's caching allocator, each with its blocks, in torch's snapshot shape."""
    out = []
    for idx in range(_dev.device_count()):
        out.extend(_segments(idx))
    return out


def _segments(idx: int) -> List[Dict[str, Any]]:
    alloc = _mem().allocator(idx)
    heads = {}
    seen = set()

    def walk(b):
        while b.prev is not None:
            b = b.prev
        if id(b) in seen:
            return
        seen.add(id(b))
        heads[b.addr] = b

    for pool in (alloc.small, alloc.large):
        for b in pool.blocks:
            walk(b)
    for b in _live_blocks(idx):
        walk(b)
    out = []
    for addr in sorted(heads):
        b, blocks = heads[addr], []
        small = b.small
        while b is not None:
            if b.mapped:
                blocks.append({"address": b.addr, "size": b.size, "requested_size": b.requested if b.allocated else 0,
                               "state": "active_allocated" if b.allocated else "inactive"})
            b = b.next
        total = sum(x["size"] for x in blocks)
        used = sum(x["size"] for x in blocks if x["state"] == "active_allocated")
        out.append({"device": idx, "address": addr, "total_size": total, "allocated_size": used,
                    "active_size": used, "requested_size": sum(x["requested_size"] for x in blocks), "stream": 0,
                    "segment_type": "small" if small else "large", "blocks": blocks})
    return out


def _live_blocks(idx: int):
    mem = _mem()
    return [r.block for r in list(mem._live.values()) if r.index == idx and r.block is not None]


def _fmt_size(sz: int, pref: int) -> str:
    prefixes = ["B ", "KB", "MB", "GB", "TB", "PB"]
    prefix = prefixes[0]
    for new_prefix in prefixes[1:]:
        if pref < 768 * 1024:
            break
        prefix = new_prefix
        sz //= 1024
        pref /= 1024
    return f"{sz:7d} {prefix}"


def _fmt_count(cnt: int, pref: int) -> str:
    prefixes = [" ", "K", "M"]
    prefix = prefixes[0]
    for new_prefix in prefixes[1:]:
        if pref < 750 * 1000:
            break
        prefix = new_prefix
        cnt //= 1000
        pref /= 1000
    return f"{cnt:7d} {prefix} "


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A human-readable table of the statistics, in the layout of torch_npu's summary."""
    idx = _index(device)
    stats = memory_stats(idx)

    def get(key: str) -> int:
        return int(stats.get(key, 0))

    rows = [
        ("allocated_bytes", "Allocated memory", _fmt_size),
        ("active_bytes", "Active memory", _fmt_size),
        ("requested_bytes", "Requested memory", _fmt_size),
        ("reserved_bytes", "NPU reserved memory", _fmt_size),
        ("inactive_split_bytes", "Non-releasable memory", _fmt_size),
        ("allocation", "Allocations", _fmt_count),
        ("active", "Active allocs", _fmt_count),
        ("segment", "NPU reserved segments", _fmt_count),
        ("inactive_split", "Non-releasable allocs", _fmt_count),
    ]
    lines = ["=" * 75, f" {'':16} PyTorch NPU memory summary, device ID {idx:<18d} ", "-" * 75,
             f"  {'':9} NPU OOMs: {get('num_ooms'):<13d} | {'':6} npuMalloc retries: {get('num_alloc_retries'):<9d}  ",
             "=" * 75, "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
    pools = [("all", "")] if abbreviated else [("all", ""), ("large_pool", "      from large pool"),
                                               ("small_pool", "      from small pool")]
    for key, name, fmt in rows:
        lines.append("-" * 75)
        for pool, label in pools:
            base = f"{key}.{pool}."
            cur, peak, alloc, freed = (get(base + k) for k in ("current", "peak", "allocated", "freed"))
            lines.append(f" {label or name:<21} | {fmt(cur, cur)} | {fmt(peak, peak)} | "
                         f"{fmt(alloc, alloc)} | {fmt(freed, freed)} ")
    lines.append("-" * 75)
    for key, name in (("oversize_allocations", "Oversize allocations"), ("oversize_segments", "Oversize NPU segments")):
        cur, peak, alloc, freed = (get(f"{key}.{k}") for k in ("current", "peak", "allocated", "freed"))
        lines.append(f" {name:<21} | {_fmt_count(cur, cur)} | {_fmt_count(peak, peak)} | "
                     f"{_fmt_count(alloc, alloc)} | {_fmt_count(freed, freed)} ")
    lines.append("=" * 75)
    return "|" + "|\n|".join(lines) + "|\n"


def get_allocator_backend() -> str:
    return "native"


# ---------------------------------------------------------------------------- pools and allocators

_pool_ids = itertools.count(1)


class MemPool:
    """A memory-pool handle. Emulated: pool membership is recorded, allocations use the one host allocator."""

    def __init__(self, allocator: Any = None, use_on_oom: bool = False, no_split: bool = False):
        if allocator is not None:
            raise unsupported("MemPool(allocator=...)", "custom device allocators cannot run on the host")
        self._id = (0, next(_pool_ids))
        self.allocator = None

    @property
    def id(self):
        return self._id

    def use_count(self) -> int:
        return 1

    def snapshot(self):
        return memory_snapshot(self._id)


class MemPoolContext:
    """Make ``pool`` the active pool inside the block (torch_npu <= 2.12). Emulated like ``use_mem_pool``."""

    _active: List[MemPool] = []

    def __init__(self, pool: MemPool):
        self.pool = pool

    def __enter__(self):
        MemPoolContext._active.append(self.pool)
        return self

    def __exit__(self, *exc):
        MemPoolContext._active.pop()
        return False

    @staticmethod
    def active_pool():
        return MemPoolContext._active[-1] if MemPoolContext._active else None


@contextlib.contextmanager
def use_mem_pool(pool: MemPool, device: Any = None):
    """Route allocations of the block to ``pool`` (emulated: accounting is unchanged)."""
    if not isinstance(pool, MemPool):
        raise TypeError(f"use_mem_pool expects a torch.npu.MemPool, got {type(pool).__name__}" + pta_error("TYPE"))
    yield


class NPUPluggableAllocator:
    def __init__(self, path_to_so_file: str, alloc_fn_name: str, free_fn_name: str):
        raise unsupported("NPUPluggableAllocator", "it loads a device allocator from a shared library, "
                          "which cannot allocate simulated (host) device memory")


def change_current_allocator(allocator: Any) -> None:
    raise unsupported("change_current_allocator", "the simulator's allocator is the host allocator and "
                      "cannot be replaced")


# ---------------------------------------------------------------------------- pinned host memory

_HOST_KEYS = [f"{group}.{k}" for group in ("allocations", "allocated_bytes", "active_requests", "active_bytes")
              for k in ("current", "peak", "allocated", "freed")] + ["num_host_alloc", "num_host_free"] + [
    f"{group}.{k}" for group in ("host_alloc_time", "host_free_time") for k in ("total", "max", "min", "count", "avg")]


def host_memory_stats() -> "collections.OrderedDict[str, int]":
    """Pinned-host allocator statistics. Emulated: pinned tensors are ordinary host copies, so all zero."""
    return collections.OrderedDict(sorted((k, 0) for k in _HOST_KEYS))


def host_memory_stats_as_nested_dict() -> Dict[str, Any]:
    nested: Dict[str, Any] = {}
    for key, value in host_memory_stats().items():
        node = nested
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return nested


def reset_accumulated_host_memory_stats() -> None:
    return None


def reset_peak_host_memory_stats() -> None:
    return None


def host_empty_cache() -> None:
    return None


# ---------------------------------------------------------------------------- memory history (private API)

_history_enabled: Any = None


def _record_memory_history(enabled: Any = "all", *args: Any, **kwargs: Any) -> None:
    """Accepted for torch.cuda parity; the simulator records no allocation stack traces."""
    global _history_enabled
    _history_enabled = enabled


def _snapshot(device: Any = None, augment_with_fx_traces: bool = False) -> Dict[str, Any]:
    """The allocator snapshot in torch's ``{"segments": [...], "device_traces": [...]}`` shape."""
    return {"segments": memory_snapshot(), "device_traces": [[] for _ in range(_dev.device_count())]}


def _dump_snapshot(filename: str = "dump_snapshot.pickle", augment_with_fx_traces: bool = False) -> None:
    """Pickle :func:`_snapshot` to ``filename`` (written atomically: temporary file, then rename)."""
    import os
    import pickle
    import tempfile

    directory = os.path.dirname(os.path.abspath(filename))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".snapshot-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(_snapshot(), fh)
        os.replace(tmp, filename)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
