"""Autocast and gradient scaling with device type ``"cuda"``.

``torch.autocast("cuda")`` / ``torch.amp.autocast(device_type="cuda")`` and, through them,
``torch.cuda.amp.autocast``; ``torch.amp.GradScaler("cuda")`` (and its default device, which is
"cuda") and ``torch.cuda.amp.GradScaler``; ``torch.amp.custom_fwd/custom_bwd(device_type="cuda")``;
``torch.is_autocast_enabled("cuda")``, ``get/set_autocast_dtype("cuda")``. The legacy no-argument
``torch.is_autocast_enabled()`` / ``get_autocast_gpu_dtype()`` asked about CUDA, so they ask about the NPU.
"""
from __future__ import annotations

from typing import Any

from ascend_compat.cuda_shim.devices import target, translate
from ascend_compat.cuda_shim.patches._common import device_kwarg
from ascend_compat.cuda_shim.registry import Patch, hit, make_wrapper


def _autocast_init(original):
    def __init__(self, device_type: Any = None, *args: Any, **kwargs: Any) -> None:
        new = translate(device_type)
        if new is not device_type:
            hit("autocast(device_type='cuda')")
        return original(self, new, *args, **kwargs)

    return make_wrapper(original, __init__)


def _grad_scaler_init(original):
    def __init__(self, device: Any = "cuda", *args: Any, **kwargs: Any) -> None:
        new = translate(device)
        if new is not device:
            hit("GradScaler(device='cuda')")
        return original(self, new, *args, **kwargs)

    return make_wrapper(original, __init__)


def _legacy_query(original, default_arg: bool = True):
    """``fn()`` meant CUDA; ``fn("cuda")`` too."""

    def query(*args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs and default_arg:
            return original(target())
        if args:
            a = args[0]
            n = translate(a)
            if n is not a:
                hit(f"torch.{original.__name__}('cuda')")
                args = (n,) + args[1:]
        d = kwargs.get("device_type")
        if d is not None:
            kwargs["device_type"] = translate(d)
        return original(*args, **kwargs)

    return make_wrapper(original, query)


def _set_enabled(original):
    """``set_autocast_enabled(flag)`` (one argument) meant CUDA; ``("cuda", flag)`` too."""

    def set_enabled(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs:
            return original(target(), args[0])
        if args:
            args = (translate(args[0]),) + args[1:]
        return original(*args, **kwargs)

    return make_wrapper(original, set_enabled)


def _gpu_dtype(getter_name: str):
    def make(original):
        import torch

        def gpu_dtype(*args: Any) -> Any:
            if getter_name == "get":
                return torch.get_autocast_dtype(target())
            return torch.set_autocast_dtype(target(), *args)

        return make_wrapper(original, gpu_dtype)

    return make


def _custom(original):
    def custom(*args: Any, **kwargs: Any) -> Any:
        d = kwargs.get("device_type")
        if d is not None:
            n = translate(d)
            if n is not d:
                kwargs["device_type"] = n
                hit(f"torch.amp.{original.__name__}(device_type='cuda')")
        return original(*args, **kwargs)

    return make_wrapper(original, custom)


def patches() -> list:
    import torch

    out = [
        Patch("torch.amp.autocast_mode:autocast.__init__", _autocast_init, "autocast('cuda')", wrap=True,
              rebind=False, concept="amp"),
        Patch("torch.amp.grad_scaler:GradScaler.__init__", _grad_scaler_init, "GradScaler('cuda') and its default",
              wrap=True, rebind=False, concept="amp"),
        Patch("torch.amp:custom_fwd", _custom, "custom_fwd(device_type='cuda')", wrap=True, concept="amp"),
        Patch("torch.amp:custom_bwd", _custom, "custom_bwd(device_type='cuda')", wrap=True, concept="amp"),
        Patch("torch:is_autocast_enabled", _legacy_query, "is_autocast_enabled() / ('cuda')", wrap=True,
              concept="amp"),
        Patch("torch:get_autocast_dtype", lambda o: _legacy_query(o, default_arg=False),
              "get_autocast_dtype('cuda')", wrap=True, concept="amp"),
        Patch("torch:set_autocast_dtype", lambda o: _legacy_query(o, default_arg=False),
              "set_autocast_dtype('cuda', dtype)", wrap=True, concept="amp"),
        Patch("torch:set_autocast_enabled", _set_enabled, "set_autocast_enabled(flag) / ('cuda', flag)",
              wrap=True, concept="amp"),
        Patch("torch:get_autocast_gpu_dtype", _gpu_dtype("get"), "legacy GPU autocast dtype", wrap=True,
              optional=True, concept="amp"),
        Patch("torch:set_autocast_gpu_dtype", _gpu_dtype("set"), "legacy GPU autocast dtype", wrap=True,
              optional=True, concept="amp"),
    ]
    if hasattr(torch.amp, "is_autocast_available"):
        out.append(Patch("torch.amp:is_autocast_available",
                         device_kwarg("torch.amp.is_autocast_available", names=("device_type",), positions=(0,),
                                      ints=False), "is_autocast_available('cuda')", wrap=True, concept="amp"))
    return out
