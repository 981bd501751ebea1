"""``torch.npu.amp`` (autocast, GradScaler, custom_fwd, custom_bwd) and the autocast state functions.

All of it is torch's own AMP machinery pointed at the ``npu`` device type, as in torch_npu: the cast
kernels for the AutocastPrivateUse1 key come from the simulator core (CUDA's cast lists).
``GradScaler`` keeps torch_npu's extra ``dynamic`` argument: ``dynamic=False`` holds the scale fixed.
"""
from __future__ import annotations

import functools
import types
import warnings
from typing import Any, Optional

import torch

from . import device as _dev


class autocast(torch.amp.autocast_mode.autocast):
    """``torch.npu.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)`` ==
    ``torch.autocast("npu", ...)``."""

    def __init__(self, enabled: bool = True, dtype: torch.dtype = torch.float16, cache_enabled: bool = True):
        super().__init__("npu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, cast_inputs: Optional[torch.dtype] = None):
    """Deprecated alias of ``torch.amp.custom_fwd(..., device_type="npu")`` (warns like torch_npu)."""
    warnings.warn(
        "`torch_npu.npu.amp.custom_fwd(args...)` is deprecated. "
        "Please use `torch.amp.custom_fwd(args..., device_type='npu')` instead.",
        FutureWarning,
        stacklevel=2,
    )
    return functools.partial(torch.amp.custom_fwd, device_type="npu")(fwd=fwd, cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """Deprecated alias of ``torch.amp.custom_bwd(..., device_type="npu")`` (warns like torch_npu)."""
    warnings.warn(
        "`torch_npu.npu.amp.custom_bwd(args...)` is deprecated. "
        "Please use `torch.amp.custom_bwd(args..., device_type='npu')` instead.",
        FutureWarning,
        stacklevel=2,
    )
    return functools.partial(torch.amp.custom_bwd, device_type="npu")(bwd)


class GradScaler(torch.amp.GradScaler):
    """torch_npu's GradScaler signature on top of ``torch.amp.GradScaler("npu")``.

    ``dynamic=False`` keeps the loss scale constant (steps with inf/nan gradients are still skipped).
    """

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, dynamic: bool = True, enabled: bool = True):
        if enabled and not _dev.is_available():
            warnings.warn("torch_npu.amp.GradScaler is enabled, but NPU is not available. Disabling.")
            enabled = False
        self._dynamic = bool(dynamic)
        super().__init__("npu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

    def update(self, new_scale: Any = None) -> None:
        if not self._dynamic and new_scale is None and self._enabled and self._scale is not None:
            new_scale = float(self._scale.item())
        super().update(new_scale)


def is_autocast_enabled() -> bool:
    return torch.is_autocast_enabled("npu")


def set_autocast_enabled(enable: bool) -> None:
    torch.set_autocast_enabled("npu", enable)


def get_autocast_dtype() -> torch.dtype:
    return torch.get_autocast_dtype("npu")


def set_autocast_dtype(dtype: torch.dtype) -> None:
    torch.set_autocast_dtype("npu", dtype)


def build_amp_module() -> types.ModuleType:
    """The ``torch.npu.amp`` module with its ``autocast_mode``, ``grad_scaler`` and ``common`` submodules."""
    amp = types.ModuleType("torch.npu.amp", "Automatic mixed precision for the simulated NPU.")
    autocast_mode = types.ModuleType("torch.npu.amp.autocast_mode")
    grad_scaler = types.ModuleType("torch.npu.amp.grad_scaler")
    common = types.ModuleType("torch.npu.amp.common")
    for mod, names in ((autocast_mode, ("autocast", "custom_fwd", "custom_bwd")), (grad_scaler, ("GradScaler",))):
        for name in names:
            setattr(mod, name, globals()[name])
        mod.__all__ = list(names)
    common.amp_definitely_not_available = lambda: not _dev.is_available()
    for name in ("autocast", "custom_fwd", "custom_bwd", "GradScaler"):
        setattr(amp, name, globals()[name])
    amp.__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]
    amp.autocast_mode, amp.grad_scaler, amp.common = autocast_mode, grad_scaler, common
    for cls in (autocast, GradScaler):
        cls.__module__ = "torch.npu.amp"
    return amp
