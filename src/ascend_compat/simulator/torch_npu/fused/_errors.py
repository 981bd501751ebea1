"""torch_npu-style errors and argument checks shared by the fused-op references.

torch_npu reports bad arguments of its custom ops as ``RuntimeError`` whose text ends with a
framework error line ``[ERROR] <time> (PID:..., Device:..., RankID:...) ERR01<TTT> OPS <kind>``.
The references raise the same exception types with the same suffix, so user code that catches or
greps these errors behaves as on the hardware.
"""
from __future__ import annotations

import torch

from ascend_compat.simulator import _error_code

SUPPORTED_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def ops_error(kind: str = "PARAM") -> str:
    """The suffix torch_npu's C++ ``OPS_ERROR(ErrCode::<kind>)`` appends (PARAM/TYPE/VALUE/NOT_SUPPORT)."""
    return _error_code.cpp_error("OPS", kind)


def check(cond: bool, message: str, kind: str = "PARAM") -> None:
    """Raise ``RuntimeError(message + suffix)`` unless ``cond`` holds (torch_npu's TORCH_CHECK)."""
    if not cond:
        raise RuntimeError(message + ops_error(kind))


def not_supported(op: str, what: str) -> NotImplementedError:
    """Error for an argument combination torch_npu accepts but this CPU reference cannot compute."""
    return NotImplementedError(
        f"{op}: {what} is not implemented by ascend-compat's CPU reference of this fused op. "
        "Remove the argument, or run on real Ascend hardware with torch_npu." + ops_error("NOT_SUPPORT")
    )


def check_float_dtype(op: str, name: str, t: torch.Tensor) -> None:
    """Reject dtypes other than float16/bfloat16/float32, as the aclnn kernels do (error 161002)."""
    check(
        t.dtype in SUPPORTED_FLOAT_DTYPES,
        f"{op}: {name} has dtype {t.dtype}, but only torch.float16, torch.bfloat16 and torch.float32 "
        "are supported on the NPU (cast with .half()/.bfloat16()/.float()).",
        "TYPE",
    )


def int_list(op: str, name: str, value) -> list[int] | None:
    """Parse a host ``int[]`` argument as torch's argument parser does (list/tuple/Size of ints).

    A multi-element tensor is rejected like torch_npu's binding rejects it, with a hint, because
    these lengths must live on the host (``cu_seqlens[1:].tolist()`` performs the device sync).
    """
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        if value.dim() == 0 and not value.is_floating_point():
            return [int(value)]
        raise TypeError(
            f"{op}(): argument '{name}' must be tuple of ints, not Tensor. torch_npu takes host int "
            f"lists here: pass tuple({name}.tolist()) (for flash-attn cu_seqlens: tuple(cu_seqlens[1:].tolist()))."
        )
    if isinstance(value, int):
        return [int(value)]
    out = []
    try:
        items = list(value)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not {type(value).__name__}") from None
    for item in items:
        if isinstance(item, bool) or not hasattr(item, "__index__"):
            if isinstance(item, torch.Tensor) and item.dim() == 0 and not item.is_floating_point():
                out.append(int(item))
                continue
            raise TypeError(
                f"{op}(): argument '{name}' must be tuple of ints, but found element of type {type(item).__name__}"
            )
        out.append(int(item.__index__()))
    return out
