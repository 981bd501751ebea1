"""Storages: ``UntypedStorage.cuda()`` / ``TypedStorage.cuda()`` move to the NPU, and ``is_cuda``
is True for npu storages (the same rule as ``Tensor.is_cuda``).

``.cuda()`` goes through the backend's own ``.npu()`` when it has one (torch_npu generates it with
``generate_methods_for_privateuse1_backend``), otherwise through ``.to(device=...)``; it does not
depend on ``torch.device("cuda")`` being translated.
"""
from __future__ import annotations

from typing import Any

from ascend_compat.cuda_shim.devices import target, translate
from ascend_compat.cuda_shim.registry import Patch, hit


def _device(device: Any) -> Any:
    import torch

    if device is None:
        return torch.device(target())
    if isinstance(device, int):
        return torch.device(target(), device)
    return translate(device, True)


def _storage_cuda(original: Any) -> Any:
    def cuda(self, device: Any = None, non_blocking: bool = False) -> Any:
        """Copy to the NPU (translated ``cuda()``); no copy when already there."""
        hit("Storage.cuda")
        dev = _device(device)
        to_npu = getattr(self, target(), None)
        if to_npu is not None:
            return to_npu(getattr(dev, "index", None), non_blocking)
        return self.to(device=dev, non_blocking=non_blocking)

    cuda.__wrapped__ = original
    cuda.__ascend_compat__ = True
    return cuda


def _is_cuda(original: property, device_of: Any) -> property:
    get = original.__get__
    tgt = target()

    def is_cuda(self) -> bool:
        return device_of(self).type == tgt or get(self)

    return property(is_cuda, doc="True for npu storages too (ascend-compat)")


def patches() -> list:
    from torch.storage import TypedStorage, UntypedStorage

    out = [
        Patch("torch.storage:_StorageBase.cuda", _storage_cuda, "UntypedStorage.cuda() moves to the NPU",
              wrap=True, rebind=False, concept="storage"),
        Patch("torch.storage:TypedStorage.cuda", _storage_cuda, "TypedStorage.cuda() moves to the NPU",
              wrap=True, rebind=False, concept="storage"),
    ]
    for cls, device_of in ((UntypedStorage, lambda s: s.device), (TypedStorage, lambda s: s._untyped_storage.device)):
        original = cls.__dict__.get("is_cuda")
        if isinstance(original, property):
            out.append(Patch(f"torch.storage:{cls.__name__}.is_cuda", _is_cuda(original, device_of),
                             "code gated on storage.is_cuda keeps its accelerator path", rebind=False,
                             concept="storage"))
    return out
