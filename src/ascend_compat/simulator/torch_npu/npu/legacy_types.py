"""Legacy tensor and storage types of ``torch.npu`` (``torch.npu.FloatTensor``, ``torch.npu.HalfStorage``, ...).

``torch.npu.FloatTensor(2, 3)`` / ``torch.npu.FloatTensor([1, 2])`` construct float32 tensors on the
current npu device, and ``isinstance(t, torch.npu.FloatTensor)`` is True for npu float32 tensors
(torch_npu's GradScaler relies on that check). The storage classes are ``_LegacyStorage``
subclasses living in module ``torch.npu``, exactly how torch_npu defines them, so torch builds npu
``TypedStorage`` objects from them. Note ``DoubleTensor`` creates float64 tensors, subject to the
simulator's float64 policy (Ascend hardware rejects most float64 work).
"""
from __future__ import annotations

from typing import Any, Dict

import torch
from torch._utils import classproperty
from torch.storage import _LegacyStorage

from . import device as _dev

_DTYPES = {
    "Bool": torch.bool, "Byte": torch.uint8, "Char": torch.int8, "Double": torch.float64, "Float": torch.float32,
    "Half": torch.float16, "Int": torch.int32, "Long": torch.int64, "Short": torch.int16, "BFloat16": torch.bfloat16,
}


class _LegacyTensorMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return (isinstance(obj, torch.Tensor) and obj.device.type == "npu" and obj.dtype == cls.dtype
                and obj.layout == torch.strided)


class _LegacyTensorBase(metaclass=_LegacyTensorMeta):
    dtype: torch.dtype = torch.float32
    is_npu = True
    is_sparse = False

    def __new__(cls, *args: Any, device: Any = None):
        idx = _dev.current_device() if device is None else _dev._get_device_index(device, optional=True)
        target = torch.device("npu", idx)
        if len(args) == 1 and isinstance(args[0], torch.Tensor):
            src = args[0]
            if src.dtype != cls.dtype:
                raise TypeError(f"expected {cls.__module__}.{cls.__name__} (got {src.type()})")
            return src.to(target)
        cpu_type = getattr(torch, cls.__name__)  # the CPU legacy constructor parses sizes/sequences
        return cpu_type(*args).to(target)


def _make_tensor_type(prefix: str, dtype: torch.dtype) -> type:
    cls = _LegacyTensorMeta(f"{prefix}Tensor", (_LegacyTensorBase,), {"dtype": dtype, "__module__": "torch.npu"})
    cls.__qualname__ = cls.__name__
    return cls


def _make_storage_type(prefix: str, dtype: torch.dtype) -> type:
    namespace = {"__module__": "torch.npu", "_dtype": classproperty(lambda self, _d=dtype: _d),
                 "dtype": classproperty(lambda self, _d=dtype: _d)}

    @classmethod
    def from_buffer(cls, *args, **kwargs):
        raise RuntimeError("from_buffer: Not available for NPU storage")

    namespace["from_buffer"] = from_buffer
    cls = type(_LegacyStorage)(f"{prefix}Storage", (_LegacyStorage,), namespace)
    cls.__qualname__ = cls.__name__
    return cls


def build_legacy_types() -> Dict[str, type]:
    """``{"FloatTensor": ..., "FloatStorage": ..., ...}`` for the ten dtypes torch_npu exposes."""
    out: Dict[str, type] = {}
    for prefix, dtype in _DTYPES.items():
        out[f"{prefix}Tensor"] = _make_tensor_type(prefix, dtype)
        storage = _make_storage_type(prefix, dtype)
        out[f"{prefix}Storage"] = storage
        torch._storage_classes.add(storage)
    return out
