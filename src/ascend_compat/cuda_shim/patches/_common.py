"""Small wrapper builders shared by the patch modules (kept tiny: they sit on hot paths)."""
from __future__ import annotations

from typing import Any, Callable

from ascend_compat.cuda_shim import devices, dtype_manager
from ascend_compat.cuda_shim.devices import translate
from ascend_compat.cuda_shim.registry import hit, make_wrapper

_DEVICE_TYPES: tuple = ()


def device_types() -> tuple:
    """``(str, torch.device, int)``: the types a device argument may have."""
    global _DEVICE_TYPES
    if not _DEVICE_TYPES:
        import torch

        from ascend_compat.cuda_shim import _device_type

        _DEVICE_TYPES = (str, _device_type.real_device_class(torch), int)
    return _DEVICE_TYPES


def device_kwarg(key: str, names: tuple[str, ...] = ("device",), positions: tuple[int, ...] = (),
                 ints: bool = True) -> Callable[[Callable], Callable]:
    """``make(original)`` for a function whose device comes in kwargs ``names`` or positions."""

    def make(original: Callable) -> Callable:
        if positions:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                for i in positions:
                    if i < len(args):
                        a = args[i]
                        n = translate(a, ints)
                        if n is not a:
                            args = args[:i] + (n,) + args[i + 1:]
                            hit(key)
                for name in names:
                    d = kwargs.get(name)
                    if d is not None:
                        n = translate(d, ints)
                        if n is not d:
                            kwargs[name] = n
                            hit(key)
                return original(*args, **kwargs)
        else:
            name0 = names[0]
            cache_get = devices._STR_CACHE.get  # same dict object for the process lifetime

            def wrapper(*args: Any, **kwargs: Any) -> Any:
                if kwargs:
                    d = kwargs.get(name0)
                    if d is not None:
                        n = cache_get(d) if type(d) is str else None
                        if n is None:
                            n = translate(d, ints)
                        if n is not d:
                            kwargs[name0] = n
                            hit(key)
                            if "dtype" in kwargs and dtype_manager.active():
                                kwargs["dtype"] = dtype_manager.device_dtype(kwargs["dtype"], key)
                    for name in names[1:]:
                        d = kwargs.get(name)
                        if d is not None:
                            n = translate(d, ints)
                            if n is not d:
                                kwargs[name] = n
                                hit(key)
                return original(*args, **kwargs)

        return make_wrapper(original, wrapper)

    return make


def all_device_args(key: str) -> Callable[[Callable], Callable]:
    """``make(original)`` translating every argument that is a CUDA device or exact CUDA device
    string (used for ``torch.cuda.*`` functions mapped to ``torch.npu``; ints are left alone)."""

    def make(original: Callable) -> Callable:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if args:
                new = tuple(translate(a) for a in args)
                if any(n is not a for n, a in zip(new, args)):
                    args = new
                    hit(key)
            if kwargs:
                for k, v in kwargs.items():
                    n = translate(v)
                    if n is not v:
                        kwargs[k] = n
                        hit(key)
            return original(*args, **kwargs)

        return make_wrapper(original, wrapper)

    return make
