"""Every Python-level monkeypatch of torch the simulator makes, each with its reason (except the
autograd engine and the backward-hook wrappers, which ``_autograd`` owns and explains).

Applied once by ``install()``; each is tested in ``tests/simulator``.
"""
from __future__ import annotations

import threading
import weakref

import torch

from ascend_compat import _versions
from ascend_compat.simulator import _host, _memory, _rng, _state

_pinned: dict = {}  # storage data_ptr -> weakref to the pinned host storage
_pinned_lock = threading.Lock()


def _patch_tensor_str():
    # Printing formats a host alias: torch's formatter upcasts to float64 on the tensor's own
    # device, where the 'strict' float64 policy would refuse it (docs/simulator_pitfalls.md, pitfall 7); the device suffix is
    # added by the caller from the original tensor.
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
        _memory.host_alias(t).copy_(_host.tensor(data, dtype=torch.uint8))
    return t.untyped_storage()


def _patch_untyped_storage():
    # torch.UntypedStorage(n, device="npu") would call the C++ PrivateUse1 allocator, which a
    # Python backend cannot register: the process segfaults (docs/simulator_pitfalls.md, pitfall 1). torch.load(map_location=
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
    # With the C++ hooks (_guard.cxx_hooks_active) torch's own pin_memory/is_pinned work and
    # nothing is patched; without them a pinned tensor is simulated as a host copy whose storage
    # is recorded here.
    from ascend_compat.simulator import _guard

    if _guard.cxx_hooks_active():
        return
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


def _patch_storage_resize():
    # Resizing an npu storage in place needs the backend's C++ ``resizePrivateUse1Bytes`` hook. The
    # simulator's C++ hooks have it (new memory from the simulator's allocator, so it is accounted):
    # storage.resize_ then works as on torch_npu (FSDP2 frees and regrows parameters this way).
    # Without them (no C++ compiler) it is a simulator limit: say so, and what to do instead.
    # Same-size resizes are no-ops, as in torch.
    from ascend_compat.simulator import _guard

    hooks = _guard.cxx_hooks()
    if hooks is not None:
        hooks.set_resize_callback(_resized_storage_bytes)
        return
    cls = torch.UntypedStorage
    orig = cls.resize_

    def resize_(self, size):
        if self.device.type == "npu":
            if size == self.nbytes():
                return self
            raise NotImplementedError(
                f"UntypedStorage.resize_({size}) on an npu storage of {self.nbytes()} bytes is not supported "
                "by the simulated NPU (a simulator limit: simulated device storage cannot change size in "
                "place; torch_npu supports it). Resize the tensor instead (tensor.resize_(...), which the "
                "simulator supports) or allocate a new tensor. Code that frees parameter memory with "
                "storage.resize_(0) and regrows it (FSDP, ZeRO-3 style offload) cannot run on the simulator until "
                "it has its C++ part (built once when a C++ compiler and ninja are present).")
        return orig(self, size)

    resize_.__doc__ = orig.__doc__
    cls.resize_ = resize_


#: an npu uint8 tensor the next storage resize takes as its new memory instead of a fresh allocation
#: (``_ipc`` moves a storage into shared memory this way: ``storage.resize_(storage.nbytes())``)
next_resize_memory = None


def _resized_storage_bytes(nbytes: int, index: int) -> torch.Tensor:
    """The new memory of an npu storage being resized (called by the C++ hooks)."""
    global next_resize_memory
    given, next_resize_memory = next_resize_memory, None
    if given is not None:
        return given
    return torch.empty(nbytes, dtype=torch.uint8, device=torch.device("npu", index))


# torch_npu has supported DLPack for npu tensors since 2.7 (torch_npu/utils/dlpack.py, patched into
# torch.from_dlpack / torch.utils.dlpack at import; absent from the 2.1-2.6 wheels).
_DLPACK_SINCE = (2, 7)


def _emulated_version() -> tuple:
    cfg = _state.config
    key = getattr(cfg, "op_table_version", None) or getattr(cfg, "torch_npu_version", None)
    return _versions.minor(key) if key else (99, 0)  # None: the newest


def _patch_dlpack():
    # torch's own from_dlpack rejects npu tensors ("Unknown device type npu for Dlpack"). torch_npu
    # >= 2.7 patches torch.from_dlpack / to_dlpack so npu tensors round-trip zero-copy as npu tensors
    # (DLPack device kDLExtDev); the simulator does the same for those versions and, for older
    # emulated versions, says that the real torch_npu lacks it.
    import torch.utils.dlpack as dl

    orig_from, orig_to = dl.from_dlpack, dl.to_dlpack

    def _check_supported(what):
        if _emulated_version() < _DLPACK_SINCE:
            v = _state.config.torch_npu_version or _state.config.op_table_version
            raise RuntimeError(
                f"{what} of an npu tensor is not supported by torch_npu {v} (the emulated version): "
                "DLPack support for npu tensors arrived in torch_npu 2.7. Copy through the CPU "
                "(tensor.cpu()), or emulate a newer torch_npu.")

    def from_dlpack(ext_tensor):
        if isinstance(ext_tensor, torch.Tensor) and ext_tensor.device.type == "npu":
            _check_supported("torch.from_dlpack")
            return torch._C._from_dlpack(ext_tensor.__dlpack__())
        return orig_from(ext_tensor)

    def to_dlpack(tensor):
        if isinstance(tensor, torch.Tensor) and tensor.device.type == "npu":
            _check_supported("torch.to_dlpack")
        return orig_to(tensor)

    from_dlpack.__doc__, to_dlpack.__doc__ = orig_from.__doc__, orig_to.__doc__
    for mod in (dl, torch.utils, torch):
        if getattr(mod, "from_dlpack", None) is orig_from:
            mod.from_dlpack = from_dlpack
        if getattr(mod, "to_dlpack", None) is orig_to:
            mod.to_dlpack = to_dlpack


def _patch_dispatch_mode_push():
    # A TorchDispatchMode on the stack makes torch route Python backend kernels through a per-op
    # table a boxed fallback is not in (INTERNAL ASSERT func != nullptr): at the first mode push,
    # the fallback-reaching ops get per-op registrations (_direct.register_fallback_ops).
    import torch.utils._python_dispatch as pd

    from ascend_compat.simulator import _direct

    orig = pd._push_mode
    lock = threading.Lock()
    done = []

    def _push_mode(*args, **kwargs):
        if not done:
            with lock:
                if not done:
                    _direct.register_fallback_ops()
                    done.append(True)
        return orig(*args, **kwargs)

    _push_mode.__doc__ = orig.__doc__
    _push_mode.__wrapped__ = orig
    pd._push_mode = _push_mode


PATCHES = (_patch_tensor_str, _patch_untyped_storage, _patch_pin_memory, _patch_accelerator_synchronize,
           _patch_generator, _patch_autocast_cache, _patch_storage_resize, _patch_dlpack,
           _patch_dispatch_mode_push)


def apply() -> None:
    """Apply every patch (once per process)."""
    for patch in PATCHES:
        patch()
