"""NPU arithmetic the simulated NPU can imitate: HF32 for float32 convolution and matmul.

On Ascend, a float32 convolution or matmul may run in HF32 on the Cube unit, as torch_npu's switches
say: ``torch.npu.conv.allow_hf32`` (default **on**) and ``torch.npu.matmul.allow_hf32`` (default
off). torch_npu sets the ACL option ``ALLOW_CONV_HF32`` "enable" and ``ALLOW_MATMUL_HF32`` "disable"
by default (its ``EnvVariables.cpp``; ``LazyInitAclops.cpp`` writes them as ``ACL_ALLOW_HF32="10"``).

:func:`enable` (or ``ASCEND_COMPAT_SIM_NUMERICS=npu`` at install) makes the simulated NPU honour
those switches: while a switch is on, the float32 inputs of the ops it governs are rounded to HF32
before the op runs. CANN does not publish HF32's exact rounding; the simulator rounds to a 10-bit
mantissa, to nearest even (TF32's format), which gives the ~1e-3 relative error HF32 is documented to
trade for speed. Off by default: exact float32 stays the simulator's default arithmetic, so that
everything else the simulator is tested against (torch's own op tests) compares exactly.
"""
from __future__ import annotations

import os
import warnings
from typing import List

__all__ = ["enable", "disable", "enabled", "hf32_round", "CONV_OPS", "MATMUL_OPS", "install_from_env"]

CONV_OPS = ("aten::convolution", "aten::convolution_backward")
MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
_LIBS: List[object] = []


def hf32_round(t):
    """``t`` (float32, any device) rounded to a 10-bit mantissa, to nearest even; Inf/NaN unchanged."""
    import torch

    host = t.detach().to("cpu").contiguous()
    bits = host.view(torch.int32)
    lsb = (bits >> 13) & 1
    rounded = ((bits + 0xFFF + lsb) & ~0x1FFF).view(torch.float32)
    out = torch.where(torch.isfinite(host), rounded, host)
    return out.to(t.device)


def enabled() -> bool:
    return bool(_LIBS)


def _switch_on(name: str) -> bool:
    import torch

    section = torch.npu.conv if name in CONV_OPS else torch.npu.matmul
    return bool(section.allow_hf32)


def _kernel(op, name: str):
    import torch

    from ascend_compat.simulator import _direct, _dispatch

    inner = _dispatch.direct_kernel(op, _direct.mode_of(op))

    def kernel(*args, **kwargs):
        if _switch_on(name):
            args = tuple(hf32_round(a) if isinstance(a, torch.Tensor) and a.dtype == torch.float32 else a
                         for a in args)
        return inner(*args, **kwargs)

    return kernel


def enable() -> None:
    """Honour the HF32 switches from now on (idempotent)."""
    from ascend_compat import simulator

    if not simulator.is_installed():
        raise RuntimeError("NPU numerics need the simulated NPU installed")
    register()


def register() -> None:
    """:func:`enable` without the installed check (the simulator's own install calls it)."""
    import torch

    if _LIBS:
        return
    lib = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():  # "Overriding a previously registered kernel": that is the point
        warnings.simplefilter("ignore")
        for name in CONV_OPS + MATMUL_OPS:
            op = getattr(getattr(torch.ops.aten, name.split("::")[1]), "default")
            lib.impl(op, _kernel(op, name), "PrivateUse1")
    _LIBS.append(lib)


def disable() -> None:
    """Exact float32 again."""
    while _LIBS:
        _LIBS.pop()._destroy()


def install_from_env() -> bool:
    """``ASCEND_COMPAT_SIM_NUMERICS=npu``: :func:`enable`; ``exact`` or unset: nothing. ValueError otherwise."""
    value = os.environ.get("ASCEND_COMPAT_SIM_NUMERICS", "").strip().lower()
    if value in ("", "exact"):
        return False
    if value != "npu":
        raise ValueError("ASCEND_COMPAT_SIM_NUMERICS must be exact or npu")
    enable()
    return True
