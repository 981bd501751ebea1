"""NPU arithmetic the simulated NPU imitates: HF32 for float32 convolution and matmul.

On Ascend, a float32 convolution or matmul may run in HF32 on the Cube unit, as torch_npu's switches
say: ``torch.npu.conv.allow_hf32`` (default **on**) and ``torch.npu.matmul.allow_hf32`` (default
off). torch_npu sets the ACL option ``ALLOW_CONV_HF32`` "enable" and ``ALLOW_MATMUL_HF32`` "disable"
by default (its ``EnvVariables.cpp``; ``LazyInitAclops.cpp`` writes them as ``ACL_ALLOW_HF32="10"``).
(CUDA does the same by default for convolutions: ``torch.backends.cudnn.allow_tf32`` is True.)

The simulated NPU honours those switches by default (mode "npu"): while a switch is on, the float32
operands the ops it governs multiply (not a bias, which is added in float32) are rounded to HF32
before the op runs. CANN does not publish HF32's
exact rounding; the simulator rounds to a 10-bit mantissa, to nearest even (TF32's format), which
gives the ~1e-3 relative error HF32 is documented to trade for speed. Mode "exact"
(``ASCEND_COMPAT_SIM_NUMERICS=exact`` or :func:`disable`) keeps exact float32 whatever the switches say.

Kernels are registered only for the op groups whose switch is on (the switch setters call
:func:`sync`), so an op whose switch is off pays nothing.
"""
from __future__ import annotations

import os
import warnings
from typing import Dict

__all__ = ["enable", "disable", "enabled", "hf32_round", "CONV_OPS", "MATMUL_OPS", "MULTIPLICANDS", "install_from_env",
           "sync"]

CONV_OPS = ("aten::convolution", "aten::convolution_backward")
MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
#: the positions of the multiplied operands: HF32 rounds what the Cube unit multiplies; a bias
#: (convolution's, addmm's and baddbmm's ``self``) is added in float32
MULTIPLICANDS = {"aten::convolution": (0, 1), "aten::convolution_backward": (0, 1, 2),
                 "aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::bmm": (0, 1), "aten::baddbmm": (1, 2)}
_GROUPS = {"conv": CONV_OPS, "matmul": MATMUL_OPS}
_mode = {"npu": False}  # True once enable()/register() ran and disable() did not follow
_LIBS: Dict[str, object] = {}  # group -> the Library holding its HF32 kernels


def _round_host(h):
    """CPU float32 tensor ``h`` rounded to a 10-bit mantissa, to nearest even, as a new tensor
    with ``h``'s layout; Inf and NaN unchanged. One pass in the simulator's C++ part when it is
    loaded and ``h`` is dense, else :func:`_round_host_torch`."""
    from ascend_compat.simulator import _cext

    if h.is_neg():  # a lazy negation: the raw memory holds the other sign
        h = h.resolve_neg()
    ext = _cext.loaded_module()
    if ext is not None and _dense(h):
        out = h.new_empty_strided(h.shape, h.stride())
        ext.hf32_round_into(h.data_ptr(), out.data_ptr(), h.numel())
        return out
    return _round_host_torch(h)


def _dense(h) -> bool:
    """``h``'s elements fill one block of memory starting at its data pointer (the layouts a
    convolution or matmul operand has: contiguous or channels_last)."""
    import torch

    if h.is_contiguous():
        return True
    fmt = {4: torch.channels_last, 5: torch.channels_last_3d}.get(h.dim())
    return fmt is not None and h.is_contiguous(memory_format=fmt)


def _round_host_torch(h):
    """:func:`_round_host` with torch's integer ops (five passes and one sum)."""
    import math

    import torch

    bits = h.view(torch.int32)
    out = bits >> 13
    out &= 1
    out += 0xFFF
    out += bits
    out &= -0x2000  # clear the 13 low mantissa bits
    rounded = out.view(torch.float32)
    if not math.isfinite(float(h.sum())):  # one cheap pass: a finite sum means no Inf or NaN
        finite = torch.isfinite(h)
        rounded = torch.where(finite, rounded, h)
    return rounded


def hf32_round(t):
    """``t`` (float32, any device) rounded to a 10-bit mantissa, to nearest even; Inf/NaN unchanged."""
    from ascend_compat.simulator import _memory

    if t.device.type != "npu":
        return _round_host(t.detach())
    return _memory.adopt(_round_host(_memory.host_alias(t.detach())), t.get_device())


def enabled() -> bool:
    """True while the simulated NPU honours the HF32 switches (mode "npu")."""
    return _mode["npu"]


def _switch_on(group: str) -> bool:
    import torch

    return bool((torch.npu.conv if group == "conv" else torch.npu.matmul).allow_hf32)


def _kernel(op):
    """The HF32 kernel of ``op``: its float32 multiplicands rounded on their host memory, the CPU kernel
    run, results adopted on the device. Anything unusual (a CPU tensor, two devices) goes to the
    generic kernel unrounded, which raises torch's device errors."""
    import torch

    from ascend_compat.simulator import _direct, _dispatch, _memory

    inner = _dispatch.direct_kernel(op, _direct.mode_of(op))
    f32 = torch.float32
    tensor = torch.Tensor
    rounded = MULTIPLICANDS[op._schema.name]

    def kernel(*args, **kwargs):
        index = None
        host_args = []
        for i, a in enumerate(args):
            if isinstance(a, tensor):
                if a.device.type != "npu" or (index is not None and a.get_device() != index):
                    return inner(*args, **kwargs)
                index = a.get_device()
                h = _memory.host_alias(a)
                host_args.append(_round_host(h) if i in rounded and a.dtype == f32 else h)
            else:
                host_args.append(a)
        if index is None:
            return inner(*args, **kwargs)
        res = op(*host_args, **kwargs)
        if isinstance(res, tensor):
            return _memory.adopt(res, index)
        return tuple(_memory.adopt(r, index) if isinstance(r, tensor) else r for r in res)

    kernel.__name__ = f"npu_sim_hf32_{op._schema.name.split('::')[-1]}"
    return kernel


def _register_group(group: str) -> None:
    import torch

    lib = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():  # "Overriding a previously registered kernel": that is the point
        warnings.simplefilter("ignore")
        for name in _GROUPS[group]:
            op = getattr(getattr(torch.ops.aten, name.split("::")[1]), "default")
            lib.impl(op, _kernel(op), "PrivateUse1")
    _LIBS[group] = lib


def sync() -> None:
    """Make the registered HF32 kernels match the switches (the switch setters call this)."""
    for group in _GROUPS:
        want = _mode["npu"] and _switch_on(group)
        if want and group not in _LIBS:
            _register_group(group)
        elif not want and group in _LIBS:
            _LIBS.pop(group)._destroy()


def enable() -> None:
    """Honour the HF32 switches from now on (idempotent)."""
    from ascend_compat import simulator

    if not simulator.is_installed():
        raise RuntimeError("NPU numerics need the simulated NPU installed")
    register()


def register() -> None:
    """:func:`enable` without the installed check (the simulator's own install calls it)."""
    _mode["npu"] = True
    sync()


def disable() -> None:
    """Exact float32 whatever the switches say."""
    _mode["npu"] = False
    sync()


def install_from_env() -> bool:
    """(Install-time) apply ``ASCEND_COMPAT_SIM_NUMERICS``: ``npu`` or unset: honour the switches (torch_npu's
    arithmetic); ``exact``: exact float32. Returns whether the switches are honoured; ValueError
    (and nothing changed) for another value."""
    value = os.environ.get("ASCEND_COMPAT_SIM_NUMERICS", "").strip().lower()
    if value not in ("", "npu", "exact"):
        raise ValueError("ASCEND_COMPAT_SIM_NUMERICS must be npu (the default) or exact")
    if value == "exact":
        disable()
        return False
    register()
    return True
