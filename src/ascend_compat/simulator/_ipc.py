"""Sharing npu tensors between processes, as torch_npu's ``multiprocessing/reductions.py`` does.

torch_npu replaces ``torch.multiprocessing.reductions.reduce_tensor``/``reduce_storage`` so that an npu
tensor sent to another process (``mp.Process(target=train, args=(model,))`` with the spawn start
method, ``Queue.put``) travels as an IPC handle of its device memory: the receiver maps the same
memory, and writes on either side are seen by the other (Hogwild training). ``share_memory_()`` stays
a no-op on npu tensors, as in torch; pickling an npu *storage* is refused ("Cannot pickle NPU storage;
try pickling a NPU tensor instead").

Simulated device memory is host memory. When an npu tensor is reduced, its whole storage is moved in
place into a POSIX shared-memory segment (:func:`shared_host_storage`: a new shared host allocation
adopted as device memory, the bytes copied, and the storage re-pointed through the C++ part's
storage-resize hook, so every view and the autograd graph keep seeing it), and the segment travels
as torch's own CPU sharing does (a file descriptor or a file name, per the sharing strategy). The
receiver (:func:`rebuild_npu_tensor`, which installs the simulator from the environment if needed, as
unpickling imports torch_npu) maps the segment and adopts it as npu memory on the same device index.
Without the C++ part a storage cannot be re-pointed: reducing an npu tensor then raises the reason.
Differences: the receiver accounts the mapped memory as its own allocation (torch_npu's opened IPC
memory is not in the receiver's caching-allocator statistics); events cannot be shared.
"""
from __future__ import annotations

import threading
import weakref
from typing import Dict

import torch

from ascend_compat.simulator import _host, _memory

_lock = threading.Lock()
#: device data pointer -> weak reference to the shared host tensor behind that device storage
_shared: Dict[int, weakref.ref] = {}
#: receiver side: host data pointer of a mapped segment -> weak reference to its npu byte tensor
_mapped: Dict[int, weakref.ref] = {}


def shared_host_storage(storage: torch.UntypedStorage, index: int) -> torch.UntypedStorage:
    """The shared-memory CPU storage behind npu ``storage`` (moved there in place on first use)."""
    with _lock:
        ptr = storage.data_ptr()
        ref = _shared.get(ptr)
        host = ref() if ref is not None else None
        if host is not None and host.data_ptr() == ptr and host.untyped_storage().nbytes() == storage.nbytes():
            return host.untyped_storage()
        from ascend_compat.simulator import _guard, _patches

        if _guard.cxx_hooks() is None:
            raise RuntimeError(
                "sharing an npu tensor with another process needs the simulated NPU's C++ part (it moves the "
                "tensor's memory into shared memory in place; a simulator limit, torch_npu shares device memory "
                "by IPC handles). It is built once when a C++ compiler and ninja are present.")
        host = _host.empty(storage.nbytes(), dtype=torch.uint8)
        from torch.multiprocessing import get_sharing_strategy

        if get_sharing_strategy() == "file_system":
            host.untyped_storage()._share_filename_cpu_()
        else:
            host.untyped_storage()._share_fd_cpu_()
        _patches.next_resize_memory = _memory.to_device(host, index)
        try:
            storage.resize_(storage.nbytes())  # the C++ hook copies the bytes and re-points the storage
        finally:
            _patches.next_resize_memory = None
        _shared[storage.data_ptr()] = weakref.ref(host)
        return host.untyped_storage()


def reduce_npu_tensor(tensor: torch.Tensor):
    """``(rebuild_npu_tensor, args)`` for an npu tensor: its metadata and its shared memory."""
    from torch.multiprocessing import reductions

    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not support "
            "crossing process boundaries.  If you just want to transfer the data, call detach() on the tensor "
            "before serializing (e.g., putting it on the queue).")
    torch.utils.hooks.warn_if_has_hooks(tensor)
    index = tensor.device.index
    host_storage = shared_host_storage(tensor.untyped_storage(), index)
    rebuild_storage, storage_args = reductions.reduce_storage(host_storage)
    return (rebuild_npu_tensor, (type(tensor), tuple(tensor.size()), tuple(tensor.stride()), tensor.storage_offset(),
                                 tensor.dtype, index, rebuild_storage, storage_args, tensor.requires_grad))


def rebuild_npu_tensor(cls, size, stride, offset, dtype, index, rebuild_storage, storage_args, requires_grad):
    """The receiving side of :func:`reduce_npu_tensor`: an npu tensor on the sender's memory."""
    from ascend_compat import simulator

    if not simulator.is_installed():
        simulator.install_from_env()
    host_storage = rebuild_storage(*storage_args)
    with _lock:
        ref = _mapped.get(host_storage.data_ptr())
        device = ref() if ref is not None else None
        if device is None or device.device.index != index:
            host = _host.empty(0, dtype=torch.uint8).set_(host_storage)
            device = _memory.to_device(host, index)
            _mapped[host_storage.data_ptr()] = weakref.ref(device)
    t = device.new_empty((0,), dtype=dtype).set_(device.untyped_storage(), offset, size, stride)
    if cls is torch.nn.Parameter:
        return torch.nn.Parameter(t, requires_grad=requires_grad)
    t.requires_grad = requires_grad
    return t


def register() -> None:
    """Put the npu cases in front of torch's tensor and storage reductions (torch_npu's
    ``_add_reductions_methods``) and re-register them with multiprocessing's pickler."""
    from torch.multiprocessing import reductions

    if getattr(reductions.reduce_tensor, "_ascend_compat_npu", False):
        return
    torch_reduce_tensor, torch_reduce_storage = reductions.reduce_tensor, reductions.reduce_storage

    def reduce_tensor(tensor):
        if tensor.device.type == "npu" and not tensor.is_nested and tensor.layout == torch.strided:
            return reduce_npu_tensor(tensor)
        return torch_reduce_tensor(tensor)

    def reduce_storage(storage):
        if storage.device.type == "npu":
            raise RuntimeError("Cannot pickle NPU storage; try pickling a NPU tensor instead")
        return torch_reduce_storage(storage)

    reduce_tensor._ascend_compat_npu = True
    reductions.reduce_tensor, reductions.reduce_storage = reduce_tensor, reduce_storage
    reductions.init_reductions()
