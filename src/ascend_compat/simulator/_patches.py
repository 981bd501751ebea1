"""Every Python-level monkeypatch of torch the simulator makes, each with its reason.

Applied once by ``install()``; each is tested in ``tests/simulator``.
"""
from __future__ import annotations

import threading
import weakref

import torch

from ascend_compat.simulator import _memory, _rng, _state

_pinned: dict = {}  # storage data_ptr -> weakref to the pinned host storage
_pinned_lock = threading.Lock()


def _patch_tensor_str():
    # Printing formats a host alias: torch's formatter upcasts to float64 on the tensor's own
    # device, which the float64 policy would reject (pitfall 7); the device suffix is added by the
    # caller from the original tensor.
    import torch._tensor_str as ts

    orig = ts._tensor_str

    def _tensor_str(self, indent):
        if self.device.type == "npu":
            self = _memory.host_alias(self.detach())
        return orig(self, indent)

    ts._tensor_str = _tensor_str


def _storage_from_npu(args, kwargs, device):
    index = _state.check_index(device)
    data = None
    if not args:
        nbytes = 0
    elif isinstance(args[0], int) and len(args) == 1:
        nbytes = args[0]
    elif len(args) == 1 and isinstance(args[0], (list, tuple)):
        data = list(args[0])
        nbytes = len(data)
    else:
        raise TypeError(f"UntypedStorage(*{args!r}, device={device!r}): unsupported arguments for npu storage")
    t = _memory.allocate((nbytes,), None, torch.uint8, index)
    if data is not None:
        _memory.host_alias(t).copy_(torch.tensor(data, dtype=torch.uint8))
    return t.untyped_storage()


def _patch_untyped_storage():
    # torch.UntypedStorage(n, device="npu") would call the C++ PrivateUse1 allocator, which a
    # Python backend cannot register: the process segfaults (pitfall 1). torch.load(map_location=
    # "npu") takes this path through the generated UntypedStorage.npu().
    cls = torch.UntypedStorage
    orig_new = cls.__new__

    def __new__(klass, *args, device=None, **kwargs):
        if device is not None:
            dev = torch.device(device) if not isinstance(device, torch.device) else device
            if dev.type == "npu":
                if kwargs:
                    raise TypeError(f"unsupported arguments for npu UntypedStorage: {sorted(kwargs)}")
                return _storage_from_npu(args, kwargs, dev)
        if device is None:
            return orig_new(klass, *args, **kwargs)
        return orig_new(klass, *args, device=device, **kwargs)

    cls.__new__ = __new__


def _patch_pin_memory():
    # Pinned memory needs the backend's C++ pinned allocator hook (not providable from Python).
    # A pinned tensor is simulated as a host copy whose storage is recorded here.
    orig_pin = torch.Tensor.pin_memory
    orig_is_pinned = torch.Tensor.is_pinned

    def _forget(ptr):
        def cb(_ref):
            with _pinned_lock:
                if _pinned.get(ptr) is _ref:
                    del _pinned[ptr]
        return cb

    def pin_memory(self, device=None):
        if self.device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
        if is_pinned(self):
            return self
        out = self.clone() if self.is_contiguous() else self.contiguous().clone()
        storage = out.untyped_storage()
        ptr = storage.data_ptr()
        with _pinned_lock:
            _pinned[ptr] = weakref.ref(storage, _forget(ptr))
        return out

    def is_pinned(self, device=None):
        if self.device.type != "cpu":
            return False
        ref = _pinned.get(self.untyped_storage().data_ptr())
        return ref is not None and ref() is not None

    pin_memory.__doc__ = orig_pin.__doc__
    is_pinned.__doc__ = orig_is_pinned.__doc__
    torch.Tensor.pin_memory = pin_memory
    torch.Tensor.is_pinned = is_pinned


def _patch_accelerator_synchronize():
    # torch.accelerator.synchronize asks the C++ device guard to synchronize, which the Python
    # guard does not implement; execution is synchronous anyway.
    acc = getattr(torch, "accelerator", None)
    if acc is None or not hasattr(acc, "synchronize"):
        return
    orig = acc.synchronize

    def synchronize(device=None):
        if device is None or torch.device(device if not isinstance(device, int) else "npu").type == "npu":
            if device is not None and not isinstance(device, int):
                _state.check_index(device)
            return None
        return orig(device)

    synchronize.__doc__ = orig.__doc__
    acc.synchronize = synchronize


def _patch_generator():
    # torch.Generator("npu") asks the C++ hooks for getNewGenerator, which Python hooks cannot
    # provide; see _rng.GeneratorFactory (isinstance checks keep working).
    torch.Generator = _rng.GeneratorFactory


def _patch_autocast_cache():
    # Autocast's weight-cast cache lives in C++ and is cleared by torch.clear_autocast_cache() on
    # exit of the outermost autocast region; the simulator's npu cast cache is cleared with it.
    from ascend_compat.simulator import _amp

    orig = torch.clear_autocast_cache

    def clear_autocast_cache():
        _amp.clear_cache()
        return orig()

    clear_autocast_cache.__doc__ = orig.__doc__
    torch.clear_autocast_cache = clear_autocast_cache


PATCHES = (_patch_tensor_str, _patch_untyped_storage, _patch_pin_memory, _patch_accelerator_synchronize,
           _patch_generator, _patch_autocast_cache)


def apply() -> None:
    """Apply every patch (once per process)."""
    for patch in PATCHES:
        patch()
