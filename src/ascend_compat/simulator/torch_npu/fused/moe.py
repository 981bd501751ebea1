"""CPU references of torch_npu's MoE routing ops (torch_npu 2.14 schemas; formulas from the op docs in the
wheel's ``_op_plugin_docs.py`` and CANN's aclnnMoe* documentation).

* ``npu_moe_gating_top_k_softmax(x, finished=None, k=1) -> (y, expert_idx, row_idx)``: softmax over the
  last axis (float32), top-k; ``row_idx = arange(N*k).reshape(k, N).T`` (N = rows); rows marked
  ``finished`` get expert id ``E`` (the expert count, i.e. no expert). ``expert_idx``/``row_idx`` int32.
* ``npu_moe_gating_top_k(x, k, *, bias, k_group, group_count, group_select_mode, renorm, norm_type,
  out_flag, routed_scaling_factor, eps, input_ids, tid2eid) -> (y, expert_idx, norm_out)``: norm = softmax
  (``norm_type=0``) or sigmoid (1) in float32; selection on ``norm + bias`` restricted to the best
  ``k_group`` of ``group_count`` groups (group score: max, or the sum of its top two for
  ``group_select_mode=1``); ``y`` = the selected *norm* values, renormalised to sum 1 (+eps) for sigmoid,
  times ``routed_scaling_factor``. Hash mode (``input_ids`` + ``tid2eid``) picks ``tid2eid[input_ids]``.
* ``npu_moe_init_routing(x, row_idx, expert_idx, active_num) -> (expanded_x, expanded_row_idx,
  expanded_expert_idx)``: stable key-value sort of ``expert_idx`` carrying ``row_idx``;
  ``expanded_row_idx[sorted_row_idx[i]] = i``; ``expanded_x[i] = x[sorted_row_idx[i] % N]`` for the first
  ``min(N, active_num) * k`` rows.
* ``npu_moe_init_routing_v2(x, expert_idx, *, ...) -> (expanded_x, expanded_row_idx,
  expert_token_cumsum_or_count, expanded_scale)``: dropless mode; sort of the flattened ``expert_idx``
  (position p = row*k + j), rows of experts outside ``active_expert_range`` dropped;
  ``row_idx_type=0``: ``expanded_row_idx[sorted[i]] = i`` (-1 for dropped), 1: ``sorted`` itself; token
  counts per expert as cumsum (type 0), count (1) or (expert, count) pairs (2); ``quant_mode=1`` quantises
  ``expanded_x`` per row to int8 (``expanded_scale`` = row scale), ``-1`` copies it.
* ``npu_moe_finalize_routing(expanded_permuted_rows, skip1, skip2, bias, scales, expanded_src_to_dst_row,
  export_for_source_row, drop_pad_mode=0, k=1)``:
  ``out[i] = skip1[i] + skip2[i] + Σ_j scales[i,j]·(rows[src_to_dst[i + j·N]] + bias[expert[i,j]])``.
* ``npu_moe_compute_expert_tokens(sorted_expert_for_source_row, num_expert)``: for each expert the end
  position of its rows in the sorted list (``searchsorted(..., right=True)``), dtype of the input.
"""
from __future__ import annotations

from typing import List, Optional

import torch

from ascend_compat.simulator.torch_npu.fused._errors import check, check_float_dtype, not_supported


def npu_moe_gating_top_k_softmax(x: torch.Tensor, finished: Optional[torch.Tensor] = None, k: int = 1):
    op = "npu_moe_gating_top_k_softmax"
    check_float_dtype(op, "x", x)
    check(x.dim() in (2, 3), f"{op}: x must be 2D or 3D, got {x.dim()}D.")
    check(0 < k <= x.shape[-1] and k <= 1024, f"{op}: k must be in (0, min(x.size(-1), 1024)], got {k}.")
    probs = torch.softmax(x.float(), dim=-1)
    y, idx = probs.topk(k, dim=-1)
    idx = idx.to(torch.int32)
    if finished is not None:
        check(finished.dtype == torch.bool and tuple(finished.shape) == tuple(x.shape[:-1]),
              f"{op}: finished must be a bool tensor of shape {list(x.shape[:-1])}.")
        idx = torch.where(finished.unsqueeze(-1), torch.full_like(idx, x.shape[-1]), idx)
    rows = x.numel() // x.shape[-1]
    row_idx = torch.arange(rows * k, dtype=torch.int32, device=x.device).reshape(k, rows).t().reshape(idx.shape)
    return y.to(x.dtype), idx, row_idx.contiguous()


def npu_moe_gating_top_k(x: torch.Tensor, k: int, *, bias=None, input_ids=None, tid2eid=None, k_group: int = 1,
                         group_count: int = 1, group_select_mode: int = 0, renorm: int = 0, norm_type: int = 0,
                         out_flag: bool = False, routed_scaling_factor: float = 1.0, eps: float = 1e-20):
    op = "npu_moe_gating_top_k"
    check_float_dtype(op, "x", x)
    check(x.dim() == 2, f"{op}: x must be 2D, got {x.dim()}D.")
    experts = x.shape[-1]
    check(group_count > 0 and experts % group_count == 0, f"{op}: x.size(-1)={experts} must be divisible by "
                                                          f"group_count={group_count}.")
    check(1 <= k_group <= group_count, f"{op}: k_group must be in [1, group_count], got {k_group}.")
    check(1 <= k <= experts // group_count * k_group, f"{op}: k={k} must be in [1, x.size(-1)/group_count*k_group].")
    check(renorm == 0, f"{op}: only renorm=0 is supported, got {renorm}.")
    check(norm_type in (0, 1), f"{op}: norm_type must be 0 (softmax) or 1 (sigmoid), got {norm_type}.")
    norm = torch.softmax(x.float(), -1) if norm_type == 0 else torch.sigmoid(x.float())
    if input_ids is not None or tid2eid is not None:
        check(input_ids is not None and tid2eid is not None, f"{op}: hash mode needs both input_ids and tid2eid.")
        idx = tid2eid.long()[input_ids.long()][:, :k]
    else:
        score = norm + bias.float() if bias is not None else norm
        if group_count > 1:
            grouped = score.reshape(score.shape[0], group_count, experts // group_count)
            gscore = grouped.max(-1).values if group_select_mode == 0 else grouped.topk(2, -1).values.sum(-1)
            keep = torch.zeros_like(gscore, dtype=torch.bool).scatter_(1, gscore.topk(k_group, -1).indices, True)
            score = score.masked_fill(~keep.repeat_interleave(experts // group_count, 1), float("-inf"))
        idx = score.topk(k, -1).indices
    y = norm.gather(-1, idx)
    if norm_type == 1:
        y = y / (y.sum(-1, keepdim=True) + eps)
    y = y * routed_scaling_factor
    return y.to(x.dtype), idx.to(torch.int32), norm


def _stable_sort(keys: torch.Tensor):
    return torch.sort(keys, stable=True)


def npu_moe_init_routing(x: torch.Tensor, row_idx: torch.Tensor, expert_idx: torch.Tensor, active_num: int):
    op = "npu_moe_init_routing"
    check(x.dim() == 2 and expert_idx.dim() == 2, f"{op}: x and expert_idx must be 2D.")
    check(tuple(row_idx.shape) == tuple(expert_idx.shape), f"{op}: row_idx must have the shape of expert_idx.")
    n, k = expert_idx.shape
    # key-value sort on (expert, row_idx): the kernel orders equal experts by row_idx
    order = torch.argsort(row_idx.reshape(-1).long(), stable=True)
    keys = expert_idx.reshape(-1)[order].long()
    sorted_experts, pos = _stable_sort(keys)
    sorted_row_idx = row_idx.reshape(-1)[order][pos].long()
    expanded_row_idx = torch.empty(n * k, dtype=torch.int32, device=x.device)
    expanded_row_idx[sorted_row_idx] = torch.arange(n * k, dtype=torch.int32, device=x.device)
    rows = min(n, active_num) * k
    expanded_x = x[sorted_row_idx[:rows] % n]
    return expanded_x, expanded_row_idx, sorted_experts.to(torch.int32)


def npu_moe_init_routing_v2(x: torch.Tensor, expert_idx: torch.Tensor, *, scale=None, offset=None,
                            active_num: int = -1, expert_capacity: int = -1, expert_num: int = -1,
                            drop_pad_mode: int = 0, expert_tokens_num_type: int = 0,
                            expert_tokens_num_flag: bool = False, quant_mode: int = -1,
                            active_expert_range: Optional[List[int]] = None, row_idx_type: int = 0,
                            x_dtype: Optional[int] = None):
    op = "npu_moe_init_routing_v2"
    check(x.dim() == 2 and expert_idx.dim() == 2 and expert_idx.shape[0] == x.shape[0],
          f"{op}: x must be (N, H) and expert_idx (N, K).")
    if drop_pad_mode != 0:
        raise not_supported(op, "drop_pad_mode=1 (drop/pad mode)")
    check(quant_mode in (-1, 1), f"{op}: quant_mode must be -1 or 1 here, got {quant_mode}.")
    check(expert_tokens_num_type in (0, 1, 2), f"{op}: expert_tokens_num_type must be 0, 1 or 2.")
    n, k = expert_idx.shape
    num = expert_num if expert_num > 0 else int(expert_idx.max()) + 1
    start, end = (list(active_expert_range) if active_expert_range else [0, num])
    flat = expert_idx.reshape(-1).long()
    sorted_experts, sorted_pos = _stable_sort(flat)
    valid = (sorted_experts >= start) & (sorted_experts < end)
    kept = int(valid.sum())
    if active_num > 0:
        kept = min(kept, active_num)
    keep_pos = sorted_pos[valid][:kept]
    rows = x[keep_pos // k]
    expanded_x = torch.zeros((n * k, x.shape[1]), dtype=x.dtype if quant_mode == -1 else torch.int8, device=x.device)
    expanded_scale = torch.zeros(n * k, dtype=torch.float32, device=x.device)
    if quant_mode == 1:
        r = rows.float()
        if scale is not None:
            r = r * scale.float()[sorted_experts[valid][:kept] - start]
        row_scale = r.abs().amax(-1).clamp_min(1e-12) / 127.0
        expanded_x[:kept] = torch.round(r / row_scale.unsqueeze(-1)).clamp(-128, 127).to(torch.int8)
        expanded_scale[:kept] = row_scale
    else:
        expanded_x[:kept] = rows
        if scale is not None:
            expanded_scale[:kept] = scale.float()[keep_pos // k]
    if row_idx_type == 0:
        expanded_row_idx = torch.full((n * k,), -1, dtype=torch.int32, device=x.device)
        expanded_row_idx[keep_pos] = torch.arange(kept, dtype=torch.int32, device=x.device)
    else:
        expanded_row_idx = torch.full((n * k,), -1, dtype=torch.int32, device=x.device)
        expanded_row_idx[:kept] = keep_pos.to(torch.int32)
    counts = torch.bincount(sorted_experts[valid][:kept] - start, minlength=end - start)[: end - start]
    if expert_tokens_num_type == 0:
        tokens = counts.cumsum(0)
    elif expert_tokens_num_type == 1:
        tokens = counts
    else:
        tokens = torch.zeros((num, 2), dtype=torch.int64, device=x.device)
        nz = torch.nonzero(counts).reshape(-1)
        tokens[: nz.numel(), 0] = nz + start
        tokens[: nz.numel(), 1] = counts[nz]
    return expanded_x, expanded_row_idx, tokens.to(torch.int64), expanded_scale


def npu_moe_finalize_routing(expanded_permuted_rows: torch.Tensor, skip1, skip2, bias, scales,
                             expanded_src_to_dst_row: torch.Tensor, export_for_source_row,
                             drop_pad_mode: Optional[int] = 0, k: Optional[int] = 1):
    op = "npu_moe_finalize_routing"
    check(drop_pad_mode in (0, None), f"{op}: drop_pad_mode must be 0, got {drop_pad_mode}.")
    check(skip2 is None or skip1 is not None, f"{op}: skip1 must be given when skip2 is.")
    kk = scales.shape[1] if scales is not None else int(k or 1)
    total = expanded_src_to_dst_row.numel()
    check(total % kk == 0, f"{op}: expanded_src_to_dst_row has {total} elements, not a multiple of k={kk}.")
    n = total // kk
    rows = expanded_permuted_rows.float()[expanded_src_to_dst_row.long().reshape(kk, n)]  # (k, n, H)
    if bias is not None:
        check(export_for_source_row is not None, f"{op}: export_for_source_row is needed with bias.")
        rows = rows + bias.float()[export_for_source_row.long().t()]
    if scales is not None:
        rows = rows * scales.float().t().unsqueeze(-1)
    out = rows.sum(0)
    for skip in (skip1, skip2):
        if skip is not None:
            out = out + skip.float()
    return out.to(expanded_permuted_rows.dtype)


def npu_moe_compute_expert_tokens(sorted_expert_for_source_row: torch.Tensor, num_expert: int):
    op = "npu_moe_compute_expert_tokens"
    check(sorted_expert_for_source_row.dim() == 1, f"{op}: sorted_expert_for_source_row must be 1D.")
    check(0 < num_expert <= 2048, f"{op}: num_expert must be in (0, 2048], got {num_expert}.")
    experts = torch.arange(num_expert, device=sorted_expert_for_source_row.device,
                           dtype=sorted_expert_for_source_row.dtype)
    ends = torch.searchsorted(sorted_expert_for_source_row.contiguous(), experts, right=True)
    return ends.to(sorted_expert_for_source_row.dtype)


def npu_moe_token_permute(tokens: torch.Tensor, indices: torch.Tensor, num_out_tokens: Optional[int] = None,
                          padded_mode: bool = False):
    """``(permuted_tokens, sorted_indices)``: tokens repeated top-k times and ordered by expert (stable);
    ``permuted_tokens[sorted_indices[i]] = tokens[i // topk]``; the first ``num_out_tokens`` kept
    (None/0: all, negative: a negative slice end)."""
    op = "npu_moe_token_permute"
    check(tokens.dim() == 2 and indices.dim() in (1, 2), f"{op}: tokens must be 2D and indices 1D or 2D.")
    if padded_mode:
        raise not_supported(op, "padded_mode=True")
    topk = 1 if indices.dim() == 1 else indices.shape[1]
    order = torch.argsort(indices.reshape(-1), stable=True)
    sorted_indices = torch.empty_like(order, dtype=torch.int32)
    sorted_indices[order] = torch.arange(order.numel(), dtype=torch.int32, device=order.device)
    permuted = tokens[order // topk]
    if num_out_tokens:
        permuted = permuted[:num_out_tokens]
    return permuted, sorted_indices


def npu_moe_token_unpermute(permuted_tokens: torch.Tensor, sorted_indices: torch.Tensor, probs=None,
                            padded_mode: bool = False, restore_shape=None):
    """``out[t] = Σ_j probs[t, j] · permuted_tokens[sorted_indices[t·topk + j]]`` (topk = probs.size(1), or 1);
    rows dropped by ``num_out_tokens`` count as zero."""
    op = "npu_moe_token_unpermute"
    if padded_mode or restore_shape is not None:
        raise not_supported(op, "padded_mode=True / restore_shape")
    topk = probs.shape[1] if probs is not None else 1
    idx = sorted_indices.long()
    kept = idx < permuted_tokens.shape[0]
    rows = permuted_tokens[idx.clamp(max=max(permuted_tokens.shape[0] - 1, 0))] * kept.unsqueeze(-1).to(permuted_tokens.dtype)
    rows = rows.reshape(-1, topk, permuted_tokens.shape[-1])
    if probs is not None:
        rows = rows * probs.unsqueeze(-1).to(rows.dtype)
    return rows.sum(1)
