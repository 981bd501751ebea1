"""Route ``torch.accelerator``'s memory and stream functions, and ``torch.Event``, to the simulated NPU.

torch implements these through the C++ caching-allocator and device-guard interfaces of the
backend, which a Python backend cannot provide (they fail with an INTERNAL ASSERT or "Backend
doesn't support ..."). :func:`bridge_accelerator` wraps each one: when the target device is the
simulated npu, the call goes to the ``torch.npu`` equivalent; anything else goes to torch's original.
``torch.Event(...)`` on npu returns a ``torch.npu.Event`` (a ``torch.Event`` subclass, so
``isinstance`` keeps working) whose ``elapsed_time`` works.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

_done = False


def _is_npu(device: Any) -> bool:
    if device is None or isinstance(device, int):
        acc = torch.accelerator.current_accelerator()
        return acc is not None and acc.type == "npu"
    if isinstance(device, str):
        device = torch.device(device)
    return isinstance(device, torch.device) and device.type == "npu"


def _npu_index(device: Any) -> Any:
    if device is None or isinstance(device, int):
        return device
    return torch.device(device).index


def _wrap(orig: Callable, npu_fn: Callable, takes_device: bool = True) -> Callable:
    if takes_device:
        def wrapper(device_index: Any = None, /):
            if _is_npu(device_index):
                return npu_fn(_npu_index(device_index))
            return orig(device_index)
    else:
        def wrapper():
            if _is_npu(None):
                return npu_fn()
            return orig()
    wrapper.__name__ = getattr(orig, "__name__", "wrapper")
    wrapper.__doc__ = getattr(orig, "__doc__", None)
    wrapper._ascend_compat_original = orig
    return wrapper


class _EventMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, _ORIGINAL_EVENT)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, _ORIGINAL_EVENT)

    def __call__(cls, device: Any = None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        if _is_npu(device):
            from . import device as _dev
            from .streams import Event

            with _dev.device(_npu_index(device)):
                return Event(enable_timing=enable_timing, blocking=blocking, interprocess=interprocess)
        return _ORIGINAL_EVENT(device, enable_timing=enable_timing, blocking=blocking, interprocess=interprocess)


_ORIGINAL_EVENT = torch.Event


class EventFactory(metaclass=_EventMeta):
    """Stands in for ``torch.Event``: npu events are ``torch.npu.Event``, others torch's own."""

    __doc__ = _ORIGINAL_EVENT.__doc__


def bridge_accelerator(npu: Any) -> None:
    """Install the wrappers (once per process); ``npu`` is the simulated ``torch.npu`` module."""
    global _done
    if _done or not hasattr(torch, "accelerator"):
        return
    _done = True
    acc = torch.accelerator
    mem = getattr(acc, "memory", None)
    table = {
        "memory_allocated": lambda i: npu.memory_allocated(i),
        "max_memory_allocated": lambda i: npu.max_memory_allocated(i),
        "memory_reserved": lambda i: npu.memory_reserved(i),
        "max_memory_reserved": lambda i: npu.max_memory_reserved(i),
        "memory_stats": lambda i: npu.memory_stats(i),
        "reset_peak_memory_stats": lambda i: npu.reset_peak_memory_stats(i),
        "reset_accumulated_memory_stats": lambda i: npu.reset_accumulated_memory_stats(i),
        "get_memory_info": lambda i: npu.mem_get_info(i),
        "current_stream": lambda i: npu.current_stream(i),
    }
    for name, fn in table.items():
        for holder in (acc, mem):
            orig = getattr(holder, name, None) if holder is not None else None
            if orig is not None and not hasattr(orig, "_ascend_compat_original"):
                setattr(holder, name, _wrap(orig, fn))
    for holder in (acc, mem):
        orig = getattr(holder, "empty_cache", None) if holder is not None else None
        if orig is not None and not hasattr(orig, "_ascend_compat_original"):
            setattr(holder, "empty_cache", _wrap(orig, npu.empty_cache, takes_device=False))
    orig_set_stream = getattr(acc, "set_stream", None)
    if orig_set_stream is not None:
        def set_stream(stream: torch.Stream) -> None:
            if getattr(stream.device, "type", None) == "npu":
                return npu.set_stream(stream)
            return orig_set_stream(stream)

        set_stream.__doc__ = orig_set_stream.__doc__
        acc.set_stream = set_stream
    torch.Event = EventFactory
