"""Device memory of the simulated NPU: host storage re-tagged as ``npu`` through DLPack.

A device tensor is a plain ``torch.Tensor`` whose storage is host memory imported from a DLPack
capsule whose device field was rewritten to (kDLExtDev, index); torch maps kDLExtDev to
PrivateUse1. The reverse retag gives a zero-copy CPU alias.

Every device allocation goes through :func:`allocate` or :func:`adopt` (the funnel): the float64
mode's report (``wide_allocation_check``, set by ``_float64``), the capacity check and the exact accounting live
there. Accounting uses a weakref callback on the *host* tensor exported into the capsule: torch keeps that tensor's Python object alive (PyObject
preservation) for as long as the capsule's owner, the device storage, lives, so the callback fires
exactly when the last device view dies. A storage deleter written with ctypes would run Python while
C++ may be unwinding an exception; weakref callbacks are safe then (docs/simulator_pitfalls.md, pitfall 6).

Sizes are accounted as torch_npu's caching allocator rounds them (+32 bytes, then 512-byte blocks).
Nothing is cached, so "reserved" equals "allocated".

Interface for the stand-in's ``torch_npu.npu``: ``host_alias``, ``host_storage``, ``to_device``, ``memory_stats``, ``memory_allocated``,
``max_memory_allocated``, ``reset_peak_memory_stats``, ``reset_accumulated_memory_stats``,
``capacity``, ``set_capacity``.
"""
from __future__ import annotations

import collections
import ctypes
from itertools import accumulate
import os
import threading
import weakref
from typing import Dict, Optional

import torch

from ascend_compat.simulator import _host

KDL_CPU = 1
KDL_EXT_DEV = 12
_DEVICE_OFFSET = 8  # offsetof(DLTensor, device): after the `void* data` pointer

_to_dlpack = torch._C._to_dlpack
_from_dlpack = torch._C._from_dlpack
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_DEVTYPE = ctypes.c_int32 * 2
_CAPSULE_NAME = b"dltensor"
# PyCapsule is {PyObject_HEAD; void *pointer; ...}: reading the pointer field directly is 3x
# cheaper than calling PyCapsule_GetPointer through ctypes. Checked against it at install.
_CAPSULE_POINTER_OFFSET = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)
_void_p_at = ctypes.c_void_p.from_address
_i64_at = ctypes.c_int64.from_address

_SMALL_SIZE = 1 << 20  # torch_npu's kSmallSize: blocks up to 1 MiB come from the small pool

_lock = threading.RLock()
_live: Dict[int, "_Ref"] = {}  # id(ref) -> ref: keeps each allocation's weakref (and callback) alive
_hosts: Dict[int, "_Ref"] = {}  # data_ptr -> weakref to the host tensor behind a device allocation
_num_devices = 0

_WIDE = (torch.float64, torch.complex128)
#: called with (dtype, numel) for every float64/complex128 allocation; the float64 mode
#: (``_float64.init``) sets it, so this funnel never imports the policy above it
wide_allocation_check = None

# torch_npu initialises the device at its first allocation; a child forked after that cannot use
# the device ("Cannot re-initialize NPU in forked subprocess"). False until the first allocation
# (and again in every forked child, so the child's first allocation checks for a bad fork).
_device_ready = False


def _first_allocation() -> None:
    """Mark the NPU state initialised (``torch.npu._lazy_init``); raises in a bad fork.

    Allocations made by ``install()``'s own self-checks do not count (importing torch_npu does not
    initialise the device either).
    """
    global _device_ready
    from ascend_compat import simulator

    if not simulator.is_installed():
        return
    from ascend_compat.simulator import _state

    # torch_npu sets the current device when it initialises: with no visible device
    # (ASCEND_RT_VISIBLE_DEVICES empty, duplicated "0,0" or descending ids, which torch_npu's
    # device_count() counts as 0) that fails, so nothing can be allocated either
    _state.check_index(_state.current_device())
    lazy_init = getattr(getattr(torch, "npu", None), "_lazy_init", None)
    if lazy_init is not None:
        lazy_init()
    _device_ready = True


def _after_fork_in_child() -> None:
    global _device_ready
    _device_ready = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _retag_checked(t: torch.Tensor, device_type: int, index: int) -> torch.Tensor:
    """Reference implementation of :func:`_retag` through the C API (used by the self-check)."""
    capsule = _to_dlpack(t)
    ptr = _get_pointer(capsule, _CAPSULE_NAME)
    if ptr != _void_p_at(id(capsule) + _CAPSULE_POINTER_OFFSET).value:
        raise RuntimeError("PyCapsule layout differs from the one the simulator reads")
    dev = _DEVTYPE.from_address(ptr + _DEVICE_OFFSET)
    dev[0] = device_type
    dev[1] = index
    return _from_dlpack(capsule)


def _retag(t: torch.Tensor, device_type: int, index: int) -> torch.Tensor:
    capsule = _to_dlpack(t)
    ptr = _void_p_at(id(capsule) + _CAPSULE_POINTER_OFFSET).value
    # DLDevice {int32 device_type; int32 device_id} as one little-endian int64 store
    _i64_at(ptr + _DEVICE_OFFSET).value = device_type | (index << 32)
    return _from_dlpack(capsule)


def use_native(module) -> None:
    """Retag through the simulator's C++ part (``module``, loaded by ``_cext``): the same DLPack
    steps as :func:`_retag`, without Python in between."""
    global _retag
    _retag = module.retag


def host_for_read(t: torch.Tensor) -> torch.Tensor:
    """A CPU alias of npu tensor ``t`` for *reading*: the allocation's own host tensor when ``t``
    covers exactly that memory with the same geometry (no retag), else a fresh retag.

    Never pass the result to a kernel that may resize or re-point it: the host tensor's storage
    is resizable, and resizing it would leave the device storage dangling.
    """
    ref = _hosts.get(t.data_ptr())
    if ref is not None:
        h = ref()
        if h is not None and h.dtype == t.dtype and h.shape == t.shape and h.stride() == t.stride():
            return h
    return _retag(t, KDL_CPU, 0)


def host_for(t: torch.Tensor, write: bool) -> torch.Tensor:
    """The CPU alias the generic kernel passes for npu tensor ``t`` (conj/neg bits kept)."""
    if t.is_conj() or t.is_neg():
        return _lazy_bits(t, _retag(t, KDL_CPU, 0))
    return _retag(t, KDL_CPU, 0) if write else host_for_read(t)


def host_alias(t: torch.Tensor) -> torch.Tensor:
    """Zero-copy CPU tensor aliasing the memory of npu tensor ``t`` (same sizes, strides, dtype).

    The alias does not require grad and has its own version counter; writes through it are seen
    by ``t``. A conjugate/negative view keeps its lazy bit on the alias (DLPack exports the raw
    memory). Non-npu tensors are returned unchanged.
    """
    if t.device.type != "npu":
        return t
    return _lazy_bits(t, _retag(t, KDL_CPU, 0))


def _lazy_bits(t: torch.Tensor, host: torch.Tensor) -> torch.Tensor:
    """Re-apply ``t``'s conjugate/negative bits to its raw-memory CPU alias ``host``."""
    if t.is_conj():
        host = host.conj()
    if t.is_neg():
        host = torch._neg_view(host)
    return host


# --- accounting ---------------------------------------------------------------------------

# Counters per device, flat for speed: for each of the pools "all", "small_pool", "large_pool"
# (offset 0, 12, 24): block bytes, allocation count and requested bytes, each as
# current/peak/allocated/freed. There is no cache, so block bytes are also the "reserved" and
# "active" bytes and the allocation count is also the segment/active count.
_POOLS = ("all", "small_pool", "large_pool")
_GROUPS = ("bytes", "count", "requested")
_FIELDS = ("current", "peak", "allocated", "freed")
_NCOUNTERS = 36


class _DeviceStats:
    __slots__ = ("c", "num_ooms", "capacity")

    def __init__(self):
        self.c = [0] * _NCOUNTERS
        self.num_ooms = 0
        self.capacity: Optional[int] = None

    def get(self, group, pool, field):
        return self.c[_POOLS.index(pool) * 12 + _GROUPS.index(group) * 4 + _FIELDS.index(field)]


_devices: list = []


def init(num_devices: int, capacity: Optional[int]) -> None:
    """Set up per-device accounting (called once by ``install``)."""
    global _num_devices
    _num_devices = num_devices
    _devices[:] = [_DeviceStats() for _ in range(num_devices)]
    for d in _devices:
        d.capacity = capacity


def round_size(nbytes: int) -> int:
    """Block size torch_npu's caching allocator uses for a request of ``nbytes`` (0 stays 0)."""
    if nbytes == 0:
        return 0
    size = nbytes + 32
    return 512 * ((size + 511) // 512)


def format_size(size: int) -> str:
    """c10's ``format_size``: bytes up to 1 KiB, then KiB/MiB/GiB with two decimals."""
    if size <= 1024:
        return f"{size} bytes"
    if size <= 1048576:
        return f"{size / 1024.0:.2f} KiB"
    if size <= 1073741824:
        return f"{size / 1048576.0:.2f} MiB"
    return f"{size / 1073741824.0:.2f} GiB"


def _oom(index: int, block: int) -> None:
    d = _devices[index]
    d.num_ooms += 1
    total = d.capacity or 0
    allocated = d.c[0]
    raise torch.OutOfMemoryError(
        f"NPU out of memory. Tried to allocate {format_size(block)} (NPU {index}; "
        f"{format_size(total)} total capacity; {format_size(allocated)} already allocated; "
        f"{format_size(allocated)} current active; "
        f"{format_size(max(0, total - allocated))} free; "
        f"{format_size(allocated)} reserved in total by PyTorch)."
        "If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation."
    )


class _Ref(weakref.ref):
    """Weak reference to the host tensor behind one device allocation, with its accounting."""

    __slots__ = ("index", "block", "requested", "ptr")


# Allocation (+) and release (-) events not yet applied to the counters, in the order they
# happened: appending is atomic and cheap, so the hot path never takes the lock. Readers of the
# counters call _flush() first, which replays the events in order (peaks stay exact); _track
# flushes every _FLUSH_EVERY events so the queue stays short.
_pending: collections.deque = collections.deque()
_FLUSH_EVERY = 4096


def _flush() -> None:
    """Apply the pending events to the counters, in order (peaks stay exact)."""
    with _lock:
        n = len(_pending)
        if not n:
            return
        pop = _pending.popleft
        events = [pop() for _ in range(n)]
        if len(_devices) == 1:
            _replay(_devices[0], events)
            return
        by_device: dict = {}
        for ev in events:
            by_device.setdefault(ev[0], []).append(ev)
        for index, evs in by_device.items():
            _replay(_devices[index], evs)


def _replay(d: "_DeviceStats", events: list) -> None:
    """Apply ``(index, +-block, +-requested)`` events of one device: per pool and group, the
    running sum gives current and peak, the absolute sum the allocated/freed totals (C-level
    ``accumulate``/``sum``/``max``: the per-event cost stays far below a Python loop's)."""
    c = d.c
    _apply_pool(c, 0, events)
    small = [e for e in events if -_SMALL_SIZE <= e[1] <= _SMALL_SIZE]
    if small:
        _apply_pool(c, 12, small)
    if len(small) != len(events):
        _apply_pool(c, 24, [e for e in events if not -_SMALL_SIZE <= e[1] <= _SMALL_SIZE])


def _apply_pool(c: list, base: int, events: list) -> None:
    blocks = [e[1] for e in events]
    _apply(c, base, blocks)
    _apply(c, base + 4, [1 if b > 0 else -1 for b in blocks])
    _apply(c, base + 8, [e[2] for e in events])


def _apply(c: list, i: int, deltas: list) -> None:
    """Counters ``c[i:i+4]`` (current, peak, allocated, freed) after ``deltas`` in order."""
    cur = c[i]
    run = list(accumulate(deltas, initial=cur))
    top = max(run)
    if top > c[i + 1]:
        c[i + 1] = top
    total = run[-1] - cur
    moved = sum(map(abs, deltas))
    c[i] = run[-1]
    c[i + 2] += (moved + total) // 2
    c[i + 3] += (moved - total) // 2


def _release(ref) -> None:
    if _live.pop(id(ref), None) is None:
        return
    ptr = ref.ptr
    if _hosts.get(ptr) is ref:
        _hosts.pop(ptr, None)
    _pending.append((ref.index, -ref.block, -ref.requested))


def _track(host: torch.Tensor, index: int, requested: int) -> None:
    if requested == 0:
        return
    block = ((requested + 543) // 512) * 512  # round_size, inlined: this is the hot path
    if _devices[index].capacity is not None:
        d = _devices[index]
        with _lock:
            _flush()
            if d.c[0] + block > d.capacity:
                _oom(index, block)
            _pending.append((index, block, requested))
    else:
        _pending.append((index, block, requested))
        if len(_pending) > _FLUSH_EVERY:
            _flush()
    ref = _Ref(host, _release)
    ref.index = index
    ref.block = block
    ref.requested = requested
    ref.ptr = ptr = host.data_ptr()
    _live[id(ref)] = ref
    if not host.storage_offset():
        _hosts[ptr] = ref


def _check_capacity(index: int, requested: int) -> None:
    d = _devices[index]
    if d.capacity is not None:
        block = round_size(requested)
        with _lock:
            _flush()
            if d.c[0] + block > d.capacity:
                _oom(index, block)


# --- the funnel -------------------------------------------------------------------------------

def allocate(size, stride, dtype: torch.dtype, index: int) -> torch.Tensor:
    """New uninitialised npu tensor on device ``index`` (stride None = contiguous)."""
    if not _device_ready:
        _first_allocation()
    if dtype in _WIDE:
        n = 1
        for d in size:
            n *= d
        if wide_allocation_check is not None:
            wide_allocation_check(dtype, n)
    if stride is None:
        host = _host.empty(size, dtype=dtype)
        nbytes = host.nbytes  # a fresh contiguous tensor spans its whole storage
    else:
        host = _host.empty_strided(size, stride, dtype=dtype)
        nbytes = host.untyped_storage().nbytes()
    if nbytes:
        _track(host, index, nbytes)
    return _retag(host, KDL_EXT_DEV, index)


#: ``(quantized CPU tensor, index) -> quantized npu tensor``, set by ``_quantized.register`` at
#: install (it makes the tensor, or raises the simulator's refusal when its C++ part is missing)
quantized_adopt = None


def adopt(host: torch.Tensor, index: int) -> torch.Tensor:
    """Turn a freshly computed CPU tensor into an npu tensor on ``index`` (zero-copy, accounted).

    Lazy conjugate/negative bits are materialised first: DLPack exports raw memory only.
    """
    if not _device_ready:
        _first_allocation()
    if host.is_quantized:
        return quantized_adopt(host, index)
    if host.is_conj() or host.is_neg():
        host = host.resolve_conj().resolve_neg()
    if host.dtype in _WIDE and wide_allocation_check is not None:
        wide_allocation_check(host.dtype, host.numel())
    nbytes = host.untyped_storage().nbytes()
    if nbytes:
        _track(host, index, nbytes)
    return _retag(host, KDL_EXT_DEV, index)


def to_device(cpu_tensor: torch.Tensor, index: int) -> torch.Tensor:
    """Zero-copy npu alias of ``cpu_tensor`` on device ``index``; its memory is accounted as an allocation.

    The CPU tensor and the result share memory; the policy and capacity checks apply.
    """
    if cpu_tensor.device.type != "cpu":
        raise ValueError(f"to_device expects a CPU tensor, got one on {cpu_tensor.device}")
    return adopt(cpu_tensor, index)


_SET_STORAGE = torch.ops.aten.set_.source_Storage_storage_offset.redispatch
_SET_WHOLE = torch.ops.aten.set_.source_Storage.redispatch
_CPU_KS = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)


def restride(t: torch.Tensor, size, stride, offset: int) -> torch.Tensor:
    """Give npu tensor ``t`` the geometry ``(size, stride, offset)`` in place (``resize_``,
    ``out=`` results): within its storage by re-pointing metadata; beyond it, new device storage
    holding the old bytes is allocated (DLPack storage cannot grow) and ``t`` is re-pointed at it."""
    size, stride = tuple(size), tuple(stride)
    needed = 0
    if all(s > 0 for s in size):
        needed = (sum((s - 1) * st for s, st in zip(size, stride)) + 1 + offset) * t.element_size()
    storage = t.untyped_storage()
    if needed <= storage.nbytes():
        return _SET_STORAGE(_CPU_KS, t, storage, offset, size, stride)
    new = allocate((needed,), None, torch.uint8, t.device.index)
    old = storage.nbytes()
    if old:
        whole_old = _SET_WHOLE(_CPU_KS, allocate((0,), None, torch.uint8, t.device.index), storage)
        host_alias(new)[:old].copy_(host_alias(whole_old)[:old])
    return _SET_STORAGE(_CPU_KS, t, new.untyped_storage(), offset, size, stride)


def host_storage(t: torch.Tensor) -> torch.UntypedStorage:
    """CPU ``UntypedStorage`` aliasing the whole device storage of npu tensor ``t`` (any dtype,
    quantized included: the storage is bytes)."""
    whole = _SET_WHOLE(_CPU_KS, allocate((0,), None, torch.uint8, t.device.index), t.untyped_storage())
    return _retag(whole, KDL_CPU, 0).untyped_storage()


def shared_host_aliases(ts) -> list:
    """CPU aliases of npu tensors ``ts`` (all views of one device storage) on *one* host storage,
    so torch's CPU overlap checks (``assert_no_overlap``, TensorIterator's partial-overlap check)
    see that they alias: separate retags would each get a storage of their own. Lazy conj/neg
    bits are kept."""
    storage = host_storage(ts[0])
    return [_lazy_bits(t, _host.empty(0, dtype=t.dtype).set_(storage, t.storage_offset(), t.shape, t.stride()))
            for t in ts]


# --- statistics (torch.cuda.memory_stats-style) ----------------------------------------------

def memory_stats(index: int) -> dict:
    """Flat dict like ``torch.cuda.memory_stats``: ``"allocated_bytes.all.current"`` etc., plus ``num_ooms``."""
    d = _devices[index]
    out = {}
    with _lock:
        _flush()
        for pool in _POOLS:
            for field in _FIELDS:
                nbytes, count, req = (d.get(g, pool, field) for g in _GROUPS)
                for name in ("allocated_bytes", "reserved_bytes", "active_bytes"):
                    out[f"{name}.{pool}.{field}"] = nbytes
                for name in ("allocation", "segment", "active"):
                    out[f"{name}.{pool}.{field}"] = count
                out[f"requested_bytes.{pool}.{field}"] = req
                out[f"inactive_split.{pool}.{field}"] = 0
                out[f"inactive_split_bytes.{pool}.{field}"] = 0
        out["num_ooms"] = d.num_ooms
        out["num_alloc_retries"] = 0
        out["num_device_alloc"] = d.get("count", "all", "allocated")
        out["num_device_free"] = d.get("count", "all", "freed")
        out["num_sync_all_streams"] = 0
        out["max_split_size"] = -1
        out["oversize_allocations.current"] = out["oversize_allocations.peak"] = 0
        out["oversize_allocations.allocated"] = out["oversize_allocations.freed"] = 0
        out["oversize_segments.current"] = out["oversize_segments.peak"] = 0
        out["oversize_segments.allocated"] = out["oversize_segments.freed"] = 0
    return dict(sorted(out.items()))


def memory_allocated(index: int) -> int:
    """Bytes currently allocated on device ``index`` (torch_npu block sizes)."""
    _flush()
    return _devices[index].c[0]


def max_memory_allocated(index: int) -> int:
    """Peak of :func:`memory_allocated` since start or the last peak reset."""
    _flush()
    return _devices[index].c[1]


def reset_peak_memory_stats(index: int) -> None:
    """Set every peak counter of device ``index`` to its current value."""
    with _lock:
        _flush()
        c = _devices[index].c
        for i in range(0, _NCOUNTERS, 4):
            c[i + 1] = c[i]


def reset_accumulated_memory_stats(index: int) -> None:
    """Zero the "allocated"/"freed" totals and ``num_ooms`` of device ``index``."""
    with _lock:
        _flush()
        d = _devices[index]
        for i in range(0, _NCOUNTERS, 4):
            d.c[i + 2] = d.c[i + 3] = 0
        d.num_ooms = 0


def capacity(index: int) -> Optional[int]:
    """Simulated capacity of device ``index`` in bytes, or None (unlimited)."""
    return _devices[index].capacity


def set_capacity(index: int, nbytes: Optional[int]) -> None:
    """Set (or with None remove) the simulated capacity of device ``index``."""
    if nbytes is not None and (isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0):
        raise ValueError(f"capacity must be a positive int or None, got {nbytes!r}")
    _devices[index].capacity = nbytes
