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

Every allocation is a block of torch_npu's caching allocator (:mod:`.caching_allocator`): sizes rounded
as torch_npu rounds them, segments cached, "reserved" and OOM as on Ascend.

Interface for the stand-in's ``torch_npu.npu``: ``host_alias``, ``borrowed_host_alias``, ``host_storage``, ``to_device``, ``memory_stats``, ``memory_allocated``,
``max_memory_allocated``, ``memory_reserved``, ``empty_cache``, ``reset_peak_memory_stats``,
``reset_accumulated_memory_stats``, ``capacity``, ``set_capacity``, ``set_allowed``, ``allocator``.
"""
from __future__ import annotations

import collections
import ctypes
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
    if _conf_error is not None:
        raise RuntimeError(f"{_conf_error} (PYTORCH_NPU_ALLOC_CONF={os.environ.get('PYTORCH_NPU_ALLOC_CONF')!r})")
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


def borrowed_host_alias(t: torch.Tensor) -> torch.Tensor:
    """Like :func:`host_alias`, but the alias does not keep ``t``'s memory alive: the caller keeps ``t``
    alive for as long as the alias is used.

    For memory handed to a library that drops its last reference later, in a thread of its own (gloo's
    worker releases a finished work's tensors when it gets to it): with an owning alias the device
    storage would be released then, at a time that varies from run to run, instead of when its own last
    reference goes, as on the device.
    """
    host = host_alias(t)
    st = host.untyped_storage()
    if t.device.type != "npu" or not st.nbytes():
        return host
    raw = torch.frombuffer((ctypes.c_char * st.nbytes()).from_address(st.data_ptr()), dtype=torch.uint8)
    return _lazy_bits(t, raw.view(host.dtype).as_strided(host.size(), host.stride(), host.storage_offset()))


def _lazy_bits(t: torch.Tensor, host: torch.Tensor) -> torch.Tensor:
    """Re-apply ``t``'s conjugate/negative bits to its raw-memory CPU alias ``host``."""
    if t.is_conj():
        host = host.conj()
    if t.is_neg():
        host = torch._neg_view(host)
    return host


# --- accounting ---------------------------------------------------------------------------

# Each device has torch_npu's caching allocator (``caching_allocator.DeviceAllocator``): every device
# storage is one block of it, so "reserved" (segments), fragmentation, ``empty_cache`` and the OOM
# message behave as on Ascend. Allocations (+) and releases (-) are queued as events and replayed into
# the allocator in order when a reader needs the counters (peaks stay exact), so the hot path never
# takes the lock; with a capacity or a per-process limit each allocation is replayed at once, as it may
# fail.
_SMALL_SIZE = 1 << 20  # torch_npu's kSmallSize: blocks up to 1 MiB come from the small pool


class _Device:
    __slots__ = ("alloc", "capacity", "allowed")

    def __init__(self, capacity: Optional[int], conf):
        from ascend_compat.simulator.caching_allocator import DeviceAllocator

        self.capacity = capacity
        self.allowed: Optional[int] = None
        self.alloc = DeviceAllocator(conf, capacity=capacity)

    @property
    def limited(self) -> bool:
        return self.capacity is not None or self.allowed is not None


_devices: list = []
_conf_error: Optional[str] = None  # an invalid PYTORCH_NPU_ALLOC_CONF: raised at the first allocation


def init(num_devices: int, capacity: Optional[int], torch_npu_version: Optional[str] = None) -> None:
    """Set up per-device allocators (called once by ``install``); ``PYTORCH_NPU_ALLOC_CONF`` is read
    here, once, as torch_npu ``torch_npu_version`` reads it."""
    global _num_devices
    from ascend_compat.knowledge import alloc_conf

    global _conf_error
    try:
        conf, _conf_error = alloc_conf.from_env(torch_npu_version), None
    except alloc_conf.AllocConfError as exc:  # torch_npu raises it at the first allocation
        conf, _conf_error = alloc_conf.parse(None, torch_npu_version), str(exc)
    _num_devices = num_devices
    _devices[:] = [_Device(capacity, conf) for _ in range(num_devices)]
    for i, d in enumerate(_devices):
        d.alloc.device = i


def restart(capacity: Optional[int]) -> None:
    """Fresh allocators with ``capacity``, holding only the storages still alive: ``install`` calls it
    after its self-checks, so a new process starts with nothing reserved, as torch_npu does."""
    with _lock:
        _flush()
        conf = _devices[0].alloc.conf
        _devices[:] = [_Device(capacity, conf) for _ in range(len(_devices))]
        for i, d in enumerate(_devices):
            d.alloc.device = i
        for ref in list(_live.values()):
            a = _devices[ref.index].alloc
            cap, a.capacity = a.capacity, None
            ref.block = a.malloc(ref.requested)
            a.capacity = cap


def allocator(index: int):
    """The caching allocator model of device ``index`` (pending events applied)."""
    _flush()
    return _devices[index].alloc


def round_size(nbytes: int) -> int:
    """Block size torch_npu's caching allocator uses for a request of ``nbytes`` (0 stays 0)."""
    if nbytes == 0:
        return 0
    if _devices:
        return _devices[0].alloc.round_size(nbytes)
    size = nbytes + 32
    return 512 * ((size + 511) // 512)


from ascend_compat.simulator.caching_allocator import format_size  # noqa: E402  (re-exported)


class _Ref(weakref.ref):
    """Weak reference to the host tensor behind one device allocation, with its allocator block."""

    __slots__ = ("index", "block", "requested", "ptr")


_pending: collections.deque = collections.deque()
_FLUSH_EVERY = 4096


def _flush() -> None:
    """Replay the pending events into the allocators, in order."""
    with _lock:
        n = len(_pending)
        if not n:
            return
        pop = _pending.popleft
        for _ in range(n):
            ref, alloc = pop()
            d = _devices[ref.index].alloc
            if alloc:
                ref.block = d.malloc(ref.requested)
            elif ref.block is not None:
                d.free(ref.block)
                ref.block = None


def _raise_oom(exc) -> None:
    raise torch.OutOfMemoryError(str(exc)) from None


def _release(ref) -> None:
    if _live.pop(id(ref), None) is None:
        return
    ptr = ref.ptr
    if _hosts.get(ptr) is ref:
        _hosts.pop(ptr, None)
    _pending.append((ref, False))


def _track(host: torch.Tensor, index: int, requested: int) -> None:
    if requested == 0:
        return
    ref = _Ref(host, _release)
    ref.index = index
    ref.requested = requested
    ref.block = None
    if _devices[index].limited:
        from ascend_compat.simulator.caching_allocator import OutOfMemory

        with _lock:
            _flush()
            try:
                ref.block = _devices[index].alloc.malloc(requested)
            except OutOfMemory as exc:
                _raise_oom(exc)
    else:
        _pending.append((ref, True))
        if len(_pending) > _FLUSH_EVERY:
            _flush()
    ref.ptr = ptr = host.data_ptr()
    _live[id(ref)] = ref
    if not host.storage_offset():
        _hosts[ptr] = ref


def _check_capacity(index: int, requested: int) -> None:
    """Raise torch_npu's OOM now if a request of ``requested`` bytes could not be served (the block
    is taken and returned: the allocator keeps the segment cached, as torch_npu would)."""
    d = _devices[index]
    if d.limited and requested:
        from ascend_compat.simulator.caching_allocator import OutOfMemory

        with _lock:
            _flush()
            try:
                d.alloc.free(d.alloc.malloc(requested))
            except OutOfMemory as exc:
                _raise_oom(exc)


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
    with _lock:
        _flush()
        return dict(sorted(_devices[index].alloc.memory_stats().items()))


def memory_allocated(index: int) -> int:
    """Bytes currently allocated on device ``index`` (torch_npu block sizes)."""
    _flush()
    return _devices[index].alloc.allocated()


def max_memory_allocated(index: int) -> int:
    """Peak of :func:`memory_allocated` since start or the last peak reset."""
    _flush()
    return _devices[index].alloc.stats["allocated_bytes"][0].peak


def memory_reserved(index: int) -> int:
    """Bytes the caching allocator holds from the device (segments)."""
    _flush()
    return _devices[index].alloc.reserved()


def empty_cache(index: int) -> None:
    """Release every cached segment of device ``index`` that is wholly free."""
    with _lock:
        _flush()
        _devices[index].alloc.empty_cache()


def reset_peak_memory_stats(index: int) -> None:
    """Set every peak counter of device ``index`` to its current value."""
    with _lock:
        _flush()
        _devices[index].alloc.reset_peak()


def reset_accumulated_memory_stats(index: int) -> None:
    """Zero the "allocated"/"freed" totals and ``num_ooms`` of device ``index``."""
    with _lock:
        _flush()
        _devices[index].alloc.reset_accumulated()


def capacity(index: int) -> Optional[int]:
    """Simulated capacity of device ``index`` in bytes, or None (unlimited)."""
    return _devices[index].capacity


def set_capacity(index: int, nbytes: Optional[int]) -> None:
    """Set (or with None remove) the simulated capacity (device total) of device ``index``."""
    if nbytes is not None and (isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0):
        raise ValueError(f"capacity must be a positive int or None, got {nbytes!r}")
    with _lock:
        _flush()
        _devices[index].capacity = _devices[index].alloc.capacity = nbytes


def set_allowed(index: int, nbytes: Optional[int]) -> None:
    """The per-process limit ``set_per_process_memory_fraction`` sets (torch_npu's ``allowed_memory_maximum``)."""
    with _lock:
        _flush()
        _devices[index].allowed = _devices[index].alloc.allowed = nbytes
