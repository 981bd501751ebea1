"""The one function that translates a device-like value from CUDA to the NPU: :func:`translate`.

Rules (nothing else is ever rewritten):

=======================  ==============================================================
value                    result
=======================  ==============================================================
``"cuda"``               ``"npu"``
``"cuda:N"``             ``"npu:N"`` (exactly this grammar; ``"ckpt_cuda.pt"`` is untouched)
``torch.device("cuda")`` ``torch.device("npu")`` (same index)
``int`` N                ``"npu:N"`` only where the API takes an int as a device (``ints=True``)
``list`` / ``tuple``     element-wise (``device_ids``)
``dict``                 values translated, keys kept (``map_location`` keys name saved locations)
anything else            returned unchanged (the same object)
=======================  ==============================================================

The target type name is the PrivateUse1 backend name (``"npu"``), read once by :func:`set_target`.
"""
from __future__ import annotations

from typing import Any

from ascend_compat.knowledge import backends as _knowledge_backends, devices as _knowledge_devices

__all__ = ["translate", "translate_backend", "set_target", "target", "is_cuda_string"]

_TARGET = "npu"
_STR_CACHE: dict[str, str] = {}
_Device: Any = None  # the real torch.device class, bound by set_target()


def set_target(name: str = "npu") -> None:
    """Bind the target device type and the real ``torch.device`` class (call before translating)."""
    global _TARGET, _Device
    import torch

    from ascend_compat.cuda_shim import _device_type

    _TARGET = name
    _Device = _device_type.real_device_class(torch)
    _STR_CACHE.clear()


def target() -> str:
    """The device type CUDA values are translated to (``"npu"``)."""
    return _TARGET


def is_cuda_string(value: str) -> bool:
    """True for exactly ``"cuda"`` or ``"cuda:N"`` (the grammar lives in :mod:`ascend_compat.knowledge.devices`)."""
    return _knowledge_devices.is_cuda_string(value)


def _translate_str(value: str) -> str:
    out = _STR_CACHE.get(value)
    if out is None:
        out = _knowledge_devices.rewrite(value, _TARGET)
        if len(_STR_CACHE) < 4096:
            _STR_CACHE[value] = out
    return out


def translate(value: Any, ints: bool = False) -> Any:
    """Translate one device-like value (see the module table); unknown values pass through."""
    t = type(value)
    if t is str:
        return _translate_str(value)
    if t is _Device:
        if value.type == "cuda":
            return _Device(_TARGET, value.index) if value.index is not None else _Device(_TARGET)
        return value
    if t is int:
        return f"{_TARGET}:{value}" if ints else value
    if t is list or t is tuple:
        new = [translate(v, ints) for v in value]
        return t(new) if any(n is not v for n, v in zip(new, value)) else value
    if t is dict:
        newd = {k: translate(v, ints) for k, v in value.items()}
        return newd if any(newd[k] is not v for k, v in value.items()) else value
    return value


def translate_device_kwargs(kwargs: dict, ints: bool = True) -> bool:
    """Translate ``kwargs["device"]`` in place; True when something changed."""
    d = kwargs.get("device")
    if d is None:
        return False
    new = translate(d, ints)
    if new is d:
        return False
    kwargs["device"] = new
    return True


def translate_backend(value: Any) -> Any:
    """Distributed backend strings: ``"nccl"`` -> ``"hccl"``, ``"cuda:nccl"`` -> ``"npu:hccl"``,
    ``"cpu:gloo,cuda:nccl"`` -> ``"cpu:gloo,npu:hccl"`` (:func:`ascend_compat.knowledge.backends.rewrite`).
    Other values pass through."""
    return _knowledge_backends.rewrite(value, _TARGET)
