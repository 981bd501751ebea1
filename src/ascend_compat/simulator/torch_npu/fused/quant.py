"""CPU references of torch_npu's quantisation ops (torch_npu 2.14 schemas; formulas from the op docs in the
wheel's ``_op_plugin_docs.py``). int8 only: int4 (``quint4x2``/packed int32) arguments raise the references'
"not implemented" error. Rounding is round-half-to-even (the NPU's rint), results saturate.

* ``npu_dynamic_quant(input, *, smooth_scales, group_index, dst_type, quant_mode='pertoken',
  dst_type_max) -> (y int8, scale float32)``: ``scale = rowmax(|x·s|)/127``, ``y = round(x·s/scale)``;
  with ``group_index`` row block g (ends at ``group_index[g]``) uses ``smooth_scales[g]``.
* ``npu_dynamic_quant_asymmetric(...) -> (y, scale, offset)``: ``scale = (max-min)/255``,
  ``offset = 127 - max/scale``, ``y = round(x·s/scale + offset)``.
* ``npu_quantize(input, scales, zero_points, dtype, axis=1, div_mode=True)``: ``input/scales + zp``
  (``input·scales + zp`` when not ``div_mode``), scales along ``axis``; dtype qint8/int8 -> int8,
  quint8/uint8 -> uint8, qint32/int32 -> int32.
* ``npu_anti_quant(x, scale, *, offset, dst_dtype=float16, src_dtype=int8)``: ``(x + offset)·scale``.
* ``npu_trans_quant_param(scale, offset=None, round_mode=0)``: the int64 parameter quantised matmuls take:
  the float32 bits of ``scale`` truncated to 19 bits (``& 0xFFFFE000``), offset (9-bit int) at bit 37.
* ``npu_quant_matmul(x1, x2, scale, *, offset, pertoken_scale, bias, output_dtype, ...)``: int8 matmul
  accumulated in int32 (+ int32 bias), times ``scale`` (float, or int64 from ``npu_trans_quant_param``)
  and ``pertoken_scale``, + ``offset``; float bias added after scaling; output int8 by default, or
  ``output_dtype`` (float16/bfloat16/int32: int32 is the raw accumulator).
* ``npu_weight_quant_batchmatmul(x, weight, antiquant_scale, antiquant_offset, ..., bias,
  antiquant_group_size)``: ``x @ ((weight + offset)·scale) + bias`` in x's dtype; per-tensor,
  per-channel and per-group (``antiquant_group_size`` rows of K per scale row) scales.
"""
from __future__ import annotations

from typing import Optional

import torch

from ascend_compat.simulator.torch_npu.fused._errors import check, not_supported
from ascend_compat.simulator.torch_npu.fused.transforms import _DTYPE_ENUM

_QINT = {12: torch.int8, 13: torch.uint8, 14: torch.int32}
_INT4 = (16,)  # quint4x2


def _dtype(value, default: torch.dtype) -> torch.dtype:
    if value is None:
        return default
    if isinstance(value, torch.dtype):
        return value
    value = int(value)
    if value in _QINT:
        return _QINT[value]
    if value not in _DTYPE_ENUM:
        raise TypeError(f"unsupported dtype enum value {value}")
    return _DTYPE_ENUM[value]


def _saturate(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    info = torch.iinfo(dtype)
    return torch.round(x).clamp(info.min, info.max).to(dtype)


def _no_int4(op: str, dst_type) -> None:
    if dst_type is not None and not isinstance(dst_type, torch.dtype) and int(dst_type) in _INT4:
        raise not_supported(op, "int4 output (torch.quint4x2)")
    if dst_type is torch.quint4x2:
        raise not_supported(op, "int4 output (torch.quint4x2)")


def _smoothed(op: str, x: torch.Tensor, smooth_scales, group_index) -> torch.Tensor:
    check(x.dim() > 1, f"{op}: the input must have more than 1 dimension, got {x.dim()}.")
    xf = x.float()
    if smooth_scales is None:
        return xf
    if group_index is None:
        check(smooth_scales.dim() == 1 and smooth_scales.shape[0] == x.shape[-1],
              f"{op}: smooth_scales must be 1D of size {x.shape[-1]}.")
        return xf * smooth_scales.float()
    rows = xf.reshape(-1, x.shape[-1])
    ends = group_index.long().tolist()
    check(ends and ends[-1] == rows.shape[0], f"{op}: group_index must end at the row count {rows.shape[0]}.")
    per_row = torch.repeat_interleave(smooth_scales.float(),
                                      torch.diff(torch.tensor([0] + ends)).to(smooth_scales.device), dim=0)
    return (rows * per_row).reshape(x.shape)


def npu_dynamic_quant(input: torch.Tensor, *, smooth_scales=None, group_index=None,  # noqa: A002
                      dst_type: Optional[int] = None, quant_mode: str = "pertoken", dst_type_max: float = 0.0):
    op = "npu_dynamic_quant"
    _no_int4(op, dst_type)
    if quant_mode != "pertoken":
        raise not_supported(op, f"quant_mode={quant_mode!r}")
    x = _smoothed(op, input, smooth_scales, group_index)
    dtype = _dtype(dst_type, torch.int8)
    scale = x.abs().amax(-1) / float(torch.iinfo(dtype).max)
    y = _saturate(x / scale.unsqueeze(-1), dtype)
    return y, scale


def npu_dynamic_quant_asymmetric(input: torch.Tensor, *, smooth_scales=None, group_index=None,  # noqa: A002
                                 dst_type: Optional[int] = None, quant_mode: str = "pertoken",
                                 dst_type_max: float = 0.0):
    op = "npu_dynamic_quant_asymmetric"
    _no_int4(op, dst_type)
    if quant_mode != "pertoken":
        raise not_supported(op, f"quant_mode={quant_mode!r}")
    x = _smoothed(op, input, smooth_scales, group_index)
    dtype = _dtype(dst_type, torch.int8)
    hi, lo = x.amax(-1), x.amin(-1)
    info = torch.iinfo(dtype)
    scale = (hi - lo) / float(info.max - info.min)
    offset = info.max - hi / scale
    y = _saturate(x / scale.unsqueeze(-1) + offset.unsqueeze(-1), dtype)
    return y, scale, offset


def npu_quantize(input: torch.Tensor, scales: torch.Tensor, zero_points, dtype: int, axis: int = 1,  # noqa: A002
                 div_mode: bool = True):
    op = "npu_quantize"
    _no_int4(op, dtype)
    out_dtype = _dtype(dtype, torch.int8)
    s = scales.float()
    z = zero_points.float() if zero_points is not None else None
    if s.dim() == 1 and s.numel() > 1:
        ax = axis % input.dim() if div_mode else (input.dim() - 2 if axis == -2 else input.dim() - 1)
        check(s.shape[0] == input.shape[ax], f"{op}: scales has {s.shape[0]} elements, input axis {ax} has "
                                             f"{input.shape[ax]}.")
        shape = [1] * input.dim()
        shape[ax] = -1
        s = s.reshape(shape)
        z = z.reshape(shape) if z is not None else None
    y = input.float() / s if div_mode else input.float() * s
    if z is not None:
        y = y + z
    return _saturate(y, out_dtype)


def npu_anti_quant(x: torch.Tensor, scale: torch.Tensor, *, offset=None, dst_dtype: Optional[int] = None,
                   src_dtype: Optional[int] = None):
    op = "npu_anti_quant"
    check(x.dtype == torch.int8, f"{op}: only int8 x is supported here (int4 packed in int32 is not), got {x.dtype}.",
          "TYPE")
    check(scale.dim() == 1, f"{op}: scale must be 1D.")
    y = x.float()
    if offset is not None:
        y = y + offset.float()
    return (y * scale.float()).to(_dtype(dst_dtype, torch.float16))


def npu_trans_quant_param(scale: torch.Tensor, offset=None, round_mode: Optional[int] = 0):
    bits = scale.float().contiguous().view(torch.int32).to(torch.int64) & 0xFFFFE000
    if offset is not None:
        off = torch.round(offset.float()).to(torch.int64) & 0x1FF
        bits = bits | (off << 37)
    return bits


def _scale_values(scale: torch.Tensor) -> torch.Tensor:
    if scale.dtype == torch.int64:  # from npu_trans_quant_param: float32 bits in the low 32 bits
        return (scale & 0xFFFFFFFF).to(torch.int32).view(torch.float32)
    return scale.float()


def npu_quant_matmul(x1: torch.Tensor, x2: torch.Tensor, scale: torch.Tensor, *, offset=None, pertoken_scale=None,
                     bias=None, output_dtype: Optional[int] = None, x1_dtype=None, x2_dtype=None,
                     pertoken_scale_dtype=None, scale_dtype=None, group_sizes=None, y_scale=None):
    op = "npu_quant_matmul"
    check(x1.dtype == torch.int8 and x2.dtype == torch.int8,
          f"{op}: the reference computes int8 x int8 only, got {x1.dtype} and {x2.dtype}.", "TYPE")
    check(2 <= x1.dim() <= 6 and 2 <= x2.dim() <= 6, f"{op}: x1 and x2 must have 2-6 dimensions.")
    if group_sizes is not None or y_scale is not None:
        raise not_supported(op, "group_sizes / y_scale")
    acc = torch.matmul(x1.to(torch.int32), x2.to(torch.int32))
    out_dtype = _dtype(output_dtype, torch.int8)
    if bias is not None and bias.dtype == torch.int32:
        acc = acc + bias
        bias = None
    if out_dtype == torch.int32:
        return acc
    y = acc.float() * _scale_values(scale).reshape(-1)
    if pertoken_scale is not None:
        y = y * pertoken_scale.float().unsqueeze(-1)
    if bias is not None:
        y = y + bias.float()
    if offset is not None:
        y = y + offset.float()
    if out_dtype == torch.int8:
        return _saturate(y, torch.int8)
    return y.to(out_dtype)


def npu_weight_quant_batchmatmul(x: torch.Tensor, weight: torch.Tensor, antiquant_scale: torch.Tensor,
                                 antiquant_offset=None, quant_scale=None, quant_offset=None, bias=None,
                                 antiquant_group_size: int = 0, inner_precise: int = 0,
                                 weight_dtype: Optional[int] = None):
    op = "npu_weight_quant_batchmatmul"
    if quant_scale is not None or quant_offset is not None:
        raise not_supported(op, "quantised output (quant_scale/quant_offset)")
    check(weight.dtype == torch.int8, f"{op}: the reference takes int8 weights (int4 packed in int32 is not "
                                      f"simulated), got {weight.dtype}.", "TYPE")
    k = weight.shape[-2]
    w = weight.float()
    scale = antiquant_scale.float()
    off = antiquant_offset.float() if antiquant_offset is not None else None
    if antiquant_group_size > 0:
        check(k % antiquant_group_size == 0, f"{op}: K={k} must be a multiple of antiquant_group_size.")
        scale = scale.repeat_interleave(antiquant_group_size, dim=-2)
        off = off.repeat_interleave(antiquant_group_size, dim=-2) if off is not None else None
    if off is not None:
        w = w + off
    w = w * scale
    y = torch.matmul(x.float(), w)
    if bias is not None:
        y = y + bias.float()
    return y.to(x.dtype)
