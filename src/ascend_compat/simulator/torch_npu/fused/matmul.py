"""CPU references of torch_npu's matmul ops (torch_npu 2.14 schemas; the op docs in ``_op_plugin_docs.py``).

* ``npu_grouped_matmul(x, weight, *, bias, scale, per_token_scale, antiquant_scale, antiquant_offset,
  group_list, split_item=0, group_type=None, group_list_type=0, act_type=0, output_dtype, ...) -> Tensor[]``:
  ``y_i = x_i @ weight_i + bias_i``. ``group_type`` None/-1: x and weight pair up (one x may serve all
  weights); 0: one x is split along M by ``group_list`` (ends when ``group_list_type=0``, counts when 1;
  rows after the last group stay zero) over the experts of ``weight`` (a list of (K, N) or one (E, K, N)).
  ``split_item`` 0/1 returns one tensor per group, 2/3 the groups concatenated along M. int8 weights with
  ``antiquant_scale``(/offset) are dequantised first; int8 x and weight accumulate in int32 and are scaled
  by ``scale`` (and ``per_token_scale``) to ``output_dtype`` (default bfloat16). ``act_type`` other than 0
  is not implemented.
* ``npu_bmmV2(self, mat2, output_sizes)``: ``matmul(self, mat2)``.
* ``npu_linear(input, weight, bias=None)``: ``F.linear``.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import torch

from ascend_compat.simulator.torch_npu.fused._errors import check, not_supported
from ascend_compat.simulator.torch_npu.fused.quant import _dtype


def _weights(weight: Sequence[torch.Tensor]) -> List[torch.Tensor]:
    if len(weight) == 1 and weight[0].dim() == 3:
        return list(weight[0].unbind(0))
    return list(weight)


def _per_group(values, i: int, groups: int):
    if values is None or len(values) == 0:
        return None
    if len(values) == 1 and groups > 1 and values[0].dim() >= 2 and values[0].shape[0] == groups:
        return values[0][i]
    return values[i] if len(values) > i else values[0]


def _mm(op: str, x: torch.Tensor, w: torch.Tensor, bias, scale, per_token_scale, aq_scale, aq_offset,
        out_dtype: Optional[torch.dtype]) -> torch.Tensor:
    if x.dtype == torch.int8:
        check(w.dtype == torch.int8 and scale is not None, f"{op}: int8 x needs int8 weights and scale.", "TYPE")
        y = torch.matmul(x.to(torch.int32), w.to(torch.int32))
        if bias is not None and bias.dtype == torch.int32:
            y, bias = y + bias, None
        y = y.float() * (scale.float() if scale.dtype != torch.int64
                         else (scale & 0xFFFFFFFF).to(torch.int32).view(torch.float32))
        if per_token_scale is not None:
            y = y * per_token_scale.float().unsqueeze(-1)
        if bias is not None:
            y = y + bias.float()
        return y.to(out_dtype or torch.bfloat16)
    if w.dtype == torch.int8:
        check(aq_scale is not None, f"{op}: int8 weights with a float x need antiquant_scale.")
        wf = w.float() + (aq_offset.float() if aq_offset is not None else 0.0)
        w = (wf * aq_scale.float()).to(x.dtype)
    y = torch.matmul(x, w)
    if bias is not None:
        y = y + bias.to(y.dtype)
    return y.to(out_dtype) if out_dtype is not None else y


def npu_grouped_matmul(x, weight, *, bias=None, scale=None, offset=None, antiquant_scale=None, antiquant_offset=None,
                       per_token_scale=None, group_list=None, activation_input=None, activation_quant_scale=None,
                       activation_quant_offset=None, split_item: Optional[int] = 0, group_type: Optional[int] = None,
                       group_list_type: Optional[int] = 0, act_type: Optional[int] = 0, tuning_config=None,
                       output_dtype=None, x_dtype=None, weight_dtype=None, scale_dtype=None,
                       per_token_scale_dtype=None):
    op = "npu_grouped_matmul"
    if act_type not in (0, None):
        raise not_supported(op, f"act_type={act_type} (fused activation)")
    if offset is not None or activation_input is not None:
        raise not_supported(op, "offset / activation_input")
    check(len(x) >= 1 and len(weight) >= 1, f"{op}: x and weight must be non-empty lists.")
    ws = _weights(weight)
    groups = len(ws)
    out_dtype = _dtype(output_dtype, None) if output_dtype is not None else None
    outs: List[torch.Tensor] = []
    if group_type in (None, -1):
        xs = list(x) if len(x) == groups else [x[0]] * groups
        for i in range(groups):
            outs.append(_mm(op, xs[i], ws[i], _per_group(bias, i, groups), _per_group(scale, i, groups),
                            _per_group(per_token_scale, i, groups), _per_group(antiquant_scale, i, groups),
                            _per_group(antiquant_offset, i, groups), out_dtype))
    elif group_type == 0:
        xin = torch.cat(list(x), 0) if len(x) > 1 else x[0]
        check(group_list is not None, f"{op}: group_type=0 needs group_list.")
        sizes = group_list.tolist() if isinstance(group_list, torch.Tensor) else list(group_list)
        check(len(sizes) == groups, f"{op}: group_list has {len(sizes)} entries for {groups} weight groups.")
        if group_list_type == 1:
            counts = [int(s) for s in sizes]
        else:
            ends = [int(s) for s in sizes]
            counts = [e - s for s, e in zip([0] + ends[:-1], ends)]
        check(all(c >= 0 for c in counts) and sum(counts) <= xin.shape[0],
              f"{op}: group_list {sizes} does not fit the {xin.shape[0]} rows of x.")
        start = 0
        pts = per_token_scale[0] if per_token_scale else None
        for i, c in enumerate(counts):
            rows = xin[start:start + c]
            outs.append(_mm(op, rows, ws[i], _per_group(bias, i, groups), _per_group(scale, i, groups),
                            pts[start:start + c] if pts is not None else None,
                            _per_group(antiquant_scale, i, groups), _per_group(antiquant_offset, i, groups),
                            out_dtype))
            start += c
        if split_item in (2, 3) and start < xin.shape[0]:
            n = ws[0].shape[-1]
            dtype = outs[0].dtype if outs else (out_dtype or xin.dtype)
            outs.append(torch.zeros((xin.shape[0] - start, n), dtype=dtype, device=xin.device))
    else:
        raise not_supported(op, f"group_type={group_type} (split along K or N)")
    if split_item in (2, 3):
        return [torch.cat(outs, 0)]
    return outs


def npu_bmmV2(self: torch.Tensor, mat2: torch.Tensor, output_sizes) -> torch.Tensor:  # noqa: N802 (torch_npu name)
    return torch.matmul(self, mat2)


def npu_linear(input: torch.Tensor, weight: torch.Tensor, bias=None) -> torch.Tensor:  # noqa: A002
    return torch.nn.functional.linear(input, weight, bias)


def npu_transpose_batchmatmul(input: torch.Tensor, weight: torch.Tensor, *, bias=None, scale=None,  # noqa: A002
                              perm_x1=None, perm_x2=None, perm_y=None, batch_split_factor: Optional[int] = 1):
    """``permute(input, perm_x1) @ permute(weight, perm_x2) (+ bias)``, then ``permute(y, perm_y)``; 3D
    inputs (the permuted operands are [B, M, K] and [B, K, N]). Quantised output (``scale``) and
    ``batch_split_factor`` != 1 are not implemented."""
    op = "npu_transpose_batchmatmul"
    if scale is not None:
        raise not_supported(op, "int8 output (scale)")
    if batch_split_factor not in (None, 1):
        raise not_supported(op, f"batch_split_factor={batch_split_factor}")
    check(input.dim() == 3 and weight.dim() == 3, f"{op}: input and weight must be 3D.")
    x1 = input.permute(*perm_x1) if perm_x1 else input
    x2 = weight.permute(*perm_x2) if perm_x2 else weight
    y = torch.bmm(x1, x2)
    if bias is not None:
        y = y + bias
    return (y.permute(*perm_y) if perm_y else y).contiguous()
