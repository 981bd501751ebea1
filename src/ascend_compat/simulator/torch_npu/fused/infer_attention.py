"""CPU references of torch_npu's inference attention ops (torch_npu 2.14 schemas, Atlas A2/A3 rules).

* ``npu_prompt_flash_attention`` (prefill), ``npu_incre_flash_attention`` (decode) and
  ``npu_fused_infer_attention_score`` (both): ``softmax(scale·Q·Kᵀ + pse_shift, masked) · V``.
  They take ``num_heads``/``scale_value`` (FIA: ``scale``), ``num_key_value_heads`` (0 = same as
  ``num_heads``; GQA when it divides ``num_heads``), layouts ``BSH``/``BSND``/``BNSD``,
  ``BNSD_BSND`` (BNSD in, BSND out) and, for PFA/FIA, ``TND`` (then ``actual_seq_lengths[_kv]``
  are cumulative). Otherwise ``actual_seq_lengths`` holds per-batch valid query lengths and
  ``actual_seq_lengths_kv`` (IFA: ``actual_seq_lengths``) valid key lengths; a single value applies
  to every batch. Keys past the valid length are ignored; query rows past it are zero.
* ``atten_mask`` (bool/int8/uint8, 1 = masked out). ``sparse_mode`` 0: with a mask,
  ``pre_tokens``/``next_tokens`` also bound a top-left band (PFA's ``next_tokens`` defaults to
  0, i.e. causal); without a mask no masking. 1: full mask. 2/3/4: top-left causal, bottom-right
  causal, bottom-right band with the compressed 2048x2048 mask; 10-14 are the high-precision
  variants of 0-4. Modes 5-8 raise (torch_npu: not supported yet).
* Only float16/bfloat16 inputs (the documented A2/A3 dtypes; int8 quantised paths, antiquant,
  paged KV ``block_table``, shared prefixes and MLA rope inputs raise NotImplementedError).
* FIA returns ``(attention_out, softmax_lse)``: lse = log(sum(exp(s - max))) + max, float32
  ``[B, N, Q_S, 1]`` (TND: ``[T, N, 1]``) when ``softmax_lse_flag`` else a ``[1]`` zero tensor.

Sources: the wheel's ``npu_native_functions_by_codegen.yaml`` and ``_op_plugin_docs.py``; op-plugin
``FlashAttentionKernelNpuOpApi.cpp`` (sparse 10-14 mapping).
"""
from __future__ import annotations

import torch

from ascend_compat.simulator.torch_npu.fused._errors import check, int_list, not_supported
from ascend_compat.simulator.torch_npu.fused.attention import (
    _MAX_TOKENS,
    _from_bnsd,
    _to_bnsd,
    attention_core,
    band_masked,
    check_compressed_mask,
)

_INFER_DTYPES = (torch.float16, torch.bfloat16)


def _lengths(op, name, values, b, full):
    if values is None:
        return [full] * b
    check(len(values) == 1 or len(values) >= b,
          f"{op}: {name} must have 1 or at least B={b} entries, got {len(values)}.")
    vals = values * b if len(values) == 1 else values[:b]
    for v in vals:
        check(0 <= v <= full, f"{op}: {name} entry {v} is outside [0, {full}].")
    return vals


def _cum_lengths(op, name, values, total):
    check(values is not None and len(values) > 0, f"{op}: input_layout TND needs {name}.")
    out, prev = [], 0
    for v in values:
        check(v >= prev, f"{op}: {name} must be non-decreasing cumulative lengths, got {values}.")
        out.append(v - prev)
        prev = v
    check(prev <= total, f"{op}: {name} ends at {prev}, beyond the {total} tokens of the input.")
    return out


def _mask_rows(op, mask, b, sq, skv):
    """User mask as bool [B or 1, 1, Sq, Skv] from (S,S), (B,S,S), (1,S,S), (B,1,S,S), (1,1,S,S), (B,S)..."""
    m = mask.bool()
    if m.dim() == 2 and sq == 1 and m.shape[0] == b and m.shape[1] == skv and b != 1:
        m = m.view(b, 1, 1, skv)
    elif m.dim() == 2:
        m = m.view(1, 1, *m.shape)
    elif m.dim() == 3:
        m = m.unsqueeze(1)
    check(m.dim() == 4 and m.shape[0] in (1, b) and m.shape[1] == 1 and m.shape[2] in (1, sq) and m.shape[3] >= skv,
          f"{op}: atten_mask shape {list(mask.shape)} does not fit B={b}, Q_S={sq}, KV_S={skv}.")
    return m[..., :skv]


def _infer(op, query, key, value, *, num_heads, num_kv_heads, scale, pre, nxt, layout, atten_mask, pse_shift,
           q_lens, kv_lens, sparse_mode, lse=False):
    for name, t in (("query", query), ("key", key), ("value", value)):
        check(t.dtype in _INFER_DTYPES,
              f"{op}: {name} dtype {t.dtype} is not supported; Atlas A2/A3 accept float16 or bfloat16 "
              "(int8 quantised inputs are not modelled by ascend-compat).", "TYPE")
    check(query.dtype == key.dtype == value.dtype, f"{op}: query, key and value must share a dtype.", "TYPE")
    check(layout in ("BSH", "BSND", "BNSD", "BNSD_BSND", "TND"),
          f"{op}: input_layout must be BSH, BSND, BNSD, BNSD_BSND or TND, got {layout!r}.", "VALUE")
    if 10 <= sparse_mode <= 14:
        sparse_mode -= 10
    if 5 <= sparse_mode <= 8:
        raise not_supported(op, f"sparse_mode={sparse_mode} (torch_npu documents it as not supported yet)")
    check(0 <= sparse_mode <= 4, f"{op}: sparse_mode must be 0-4 or 10-14, got {sparse_mode}.")
    check(num_heads > 0, f"{op}: num_heads must be positive, got {num_heads}.")
    nkv = num_kv_heads or num_heads
    check(num_heads % nkv == 0 and num_heads // nkv <= 64,
          f"{op}: num_heads ({num_heads}) must be a multiple of num_key_value_heads ({nkv}) with ratio <= 64.")
    if atten_mask is not None:
        check(atten_mask.dtype in (torch.bool, torch.int8, torch.uint8),
              f"{op}: atten_mask must be bool, int8 or uint8 (1 = masked out), got {atten_mask.dtype}.", "TYPE")
        if sparse_mode in (2, 3, 4):
            check_compressed_mask(atten_mask, sparse_mode, op)
    in_layout = "BNSD" if layout == "BNSD_BSND" else layout
    out_layout = "BSND" if layout == "BNSD_BSND" else layout
    if layout == "TND":
        if pse_shift is not None:
            raise not_supported(op, "pse_shift with input_layout TND")
        qls = _cum_lengths(op, "actual_seq_lengths", q_lens, query.shape[0])
        kls = _cum_lengths(op, "actual_seq_lengths_kv", kv_lens, key.shape[0])
        check(len(qls) == len(kls), f"{op}: actual_seq_lengths and actual_seq_lengths_kv differ in length.")
        outs, lses, qs, ks = [], [], 0, 0
        for lq, lk in zip(qls, kls):
            q = query[qs:qs + lq].transpose(0, 1)[None]
            k = key[ks:ks + lk].transpose(0, 1)[None]
            v = value[ks:ks + lk].transpose(0, 1)[None]
            o, l_ = _one(q, k, v, None, None, scale, pre, nxt, sparse_mode, atten_mask, lq, lk)
            outs.append(o[0].transpose(0, 1))
            lses.append(l_[0].transpose(0, 1))
            qs, ks = qs + lq, ks + lk
        if qs < query.shape[0]:
            outs.append(torch.zeros(query.shape[0] - qs, query.shape[1], value.shape[2], device=query.device))
            lses.append(torch.full((query.shape[0] - qs, query.shape[1]), float("-inf"), device=query.device))
        return torch.cat(outs).to(query.dtype), torch.cat(lses).unsqueeze(-1)
    check(query.dim() == (3 if layout == "BSH" else 4),
          f"{op}: input_layout {layout} does not match the {query.dim()}-D query {list(query.shape)}.")
    q = _to_bnsd(query, in_layout, num_heads, None)
    k = _to_bnsd(key, in_layout, nkv, None)
    v = _to_bnsd(value, in_layout, nkv, None)
    b, n, sq, d = q.shape
    check(k.shape[1] == nkv and n == num_heads,
          f"{op}: the N axes of query/key ({n}/{k.shape[1]}) do not match num_heads/num_key_value_heads "
          f"({num_heads}/{nkv}).")
    skv = k.shape[2]
    qls = _lengths(op, "actual_seq_lengths", q_lens, b, sq)
    kls = _lengths(op, "actual_seq_lengths_kv", kv_lens, b, skv)
    mask4 = _mask_rows(op, atten_mask, b, sq, skv) if atten_mask is not None and sparse_mode in (0, 1) else None
    if pse_shift is not None:
        check(pse_shift.dim() == 4 and pse_shift.shape[0] in (1, b) and pse_shift.shape[1] == n
              and pse_shift.shape[2] >= sq and pse_shift.shape[3] >= skv,
              f"{op}: pse_shift must be (B, N, Q_S, KV_S) or (1, N, Q_S, KV_S), got {list(pse_shift.shape)}.")
    out = torch.zeros(b, n, sq, v.shape[3], device=query.device)
    lse = torch.full((b, n, sq), float("-inf"), device=query.device)
    outs, lses = [], []
    for bi in range(b):
        lq, lk = qls[bi], kls[bi]
        um = mask4[min(bi, mask4.shape[0] - 1), :, :lq, :lk] if mask4 is not None else None
        ps = pse_shift[min(bi, pse_shift.shape[0] - 1), :, :lq, :lk][None] if pse_shift is not None else None
        o, l_ = _one(q[bi:bi + 1, :, :lq], k[bi:bi + 1, :, :lk], v[bi:bi + 1, :, :lk], um, ps, scale, pre, nxt,
                     sparse_mode, atten_mask, lq, lk)
        full_o = torch.cat([o[0], out[bi, :, lq:].to(o.dtype)], 1) if lq < sq else o[0]
        full_l = torch.cat([l_[0], lse[bi, :, lq:].to(l_.dtype)], 1) if lq < sq else l_[0]
        outs.append(full_o)
        lses.append(full_l)
    out = torch.stack(outs).to(query.dtype)
    return _from_bnsd(out, out_layout), torch.stack(lses).unsqueeze(-1)


def _one(q, k, v, user_mask, pse, scale, pre, nxt, sparse_mode, atten_mask, lq, lk):
    dev = q.device
    masked = None
    if atten_mask is not None:
        if sparse_mode in (0, 1):
            masked = user_mask.view(1, 1, *user_mask.shape[-2:]) if user_mask is not None else None
            if sparse_mode == 0 and masked is not None and (pre < lq or nxt < lk):
                masked = masked | band_masked(lq, lk, pre, nxt, 0, dev)
        elif sparse_mode == 2:
            masked = band_masked(lq, lk, _MAX_TOKENS, 0, 0, dev)
        elif sparse_mode == 3:
            masked = band_masked(lq, lk, _MAX_TOKENS, 0, lk - lq, dev)
        else:
            masked = band_masked(lq, lk, pre, nxt, lk - lq, dev)
    if lq == 0 or lk == 0:
        return (torch.zeros(1, q.shape[1], lq, v.shape[3], device=dev),
                torch.full((1, q.shape[1], lq), float("-inf"), device=dev))
    out, row_max, row_sum = attention_core(q, k, v, masked, pse, scale, pse_after_scale=True)
    return out, row_max + torch.log(row_sum)


def npu_prompt_flash_attention(query, key, value, *, pse_shift=None, padding_mask=None, atten_mask=None,
                               actual_seq_lengths=None, deq_scale1=None, quant_scale1=None, deq_scale2=None,
                               quant_scale2=None, quant_offset2=None, num_heads=1, scale_value=1.0,
                               pre_tokens=2147483647, next_tokens=0, input_layout="BSH", num_key_value_heads=0,
                               actual_seq_lengths_kv=None, sparse_mode=0):
    """``torch_npu.npu_prompt_flash_attention``: prefill attention; see the module docstring."""
    op = "npu_prompt_flash_attention"
    if any(t is not None for t in (deq_scale1, quant_scale1, deq_scale2, quant_scale2, quant_offset2)):
        raise not_supported(op, "quantisation parameters")
    out, _ = _infer(op, query, key, value, num_heads=num_heads, num_kv_heads=num_key_value_heads, scale=scale_value,
                    pre=pre_tokens, nxt=next_tokens, layout=input_layout, atten_mask=atten_mask, pse_shift=pse_shift,
                    q_lens=int_list(op, "actual_seq_lengths", actual_seq_lengths),
                    kv_lens=int_list(op, "actual_seq_lengths_kv", actual_seq_lengths_kv), sparse_mode=sparse_mode)
    return out


def npu_incre_flash_attention(query, key, value, *, padding_mask=None, atten_mask=None, pse_shift=None,
                              actual_seq_lengths=None, antiquant_scale=None, antiquant_offset=None, block_table=None,
                              dequant_scale1=None, quant_scale1=None, dequant_scale2=None, quant_scale2=None,
                              quant_offset2=None, kv_padding_size=None, num_heads=1, scale_value=1.0,
                              input_layout="BSH", num_key_value_heads=0, block_size=0, inner_precise=1):
    """``torch_npu.npu_incre_flash_attention``: single-token decode against a KV cache."""
    op = "npu_incre_flash_attention"
    if block_table is not None:
        raise not_supported(op, "paged KV cache (block_table)")
    if kv_padding_size is not None:
        raise not_supported(op, "kv_padding_size (left-padded KV cache)")
    if any(t is not None for t in (antiquant_scale, antiquant_offset, dequant_scale1, quant_scale1, dequant_scale2,
                                   quant_scale2, quant_offset2)):
        raise not_supported(op, "quantisation parameters")
    check(input_layout in ("BSH", "BSND", "BNSD"), f"{op}: input_layout must be BSH, BSND or BNSD, got "
                                                   f"{input_layout!r}.", "VALUE")
    sq = query.shape[1] if input_layout in ("BSH", "BSND") else query.shape[2]
    check(sq == 1, f"{op}: the query sequence length must be 1 (incremental decoding), got {sq}.")
    out, _ = _infer(op, query, key, value, num_heads=num_heads, num_kv_heads=num_key_value_heads, scale=scale_value,
                    pre=_MAX_TOKENS, nxt=_MAX_TOKENS, layout=input_layout, atten_mask=atten_mask, pse_shift=pse_shift,
                    q_lens=None, kv_lens=int_list(op, "actual_seq_lengths", actual_seq_lengths), sparse_mode=0)
    return out


def npu_fused_infer_attention_score(query, key, value, *, pse_shift=None, atten_mask=None, actual_seq_lengths=None,
                                    actual_seq_lengths_kv=None, dequant_scale1=None, quant_scale1=None,
                                    dequant_scale2=None, quant_scale2=None, quant_offset2=None, antiquant_scale=None,
                                    antiquant_offset=None, key_antiquant_scale=None, key_antiquant_offset=None,
                                    value_antiquant_scale=None, value_antiquant_offset=None, block_table=None,
                                    query_padding_size=None, kv_padding_size=None, key_shared_prefix=None,
                                    value_shared_prefix=None, actual_shared_prefix_len=None, query_rope=None,
                                    key_rope=None, key_rope_antiquant_scale=None, num_heads=1, scale=1.0,
                                    pre_tokens=2147483647, next_tokens=2147483647, input_layout="BSH",
                                    num_key_value_heads=0, sparse_mode=0, inner_precise=0, block_size=0,
                                    antiquant_mode=0, key_antiquant_mode=0, value_antiquant_mode=0,
                                    softmax_lse_flag=False):
    """``torch_npu.npu_fused_infer_attention_score``: returns ``(attention_out, softmax_lse)``."""
    op = "npu_fused_infer_attention_score"
    unsupported = {
        "quantisation/antiquant parameters": (dequant_scale1, quant_scale1, dequant_scale2, quant_scale2,
                                              quant_offset2, antiquant_scale, antiquant_offset, key_antiquant_scale,
                                              key_antiquant_offset, value_antiquant_scale, value_antiquant_offset,
                                              key_rope_antiquant_scale),
        "paged KV cache (block_table)": (block_table,),
        "left padding (query_padding_size/kv_padding_size)": (query_padding_size, kv_padding_size),
        "shared prefixes": (key_shared_prefix, value_shared_prefix, actual_shared_prefix_len),
        "MLA rope inputs (query_rope/key_rope)": (query_rope, key_rope),
    }
    for what, values in unsupported.items():
        if any(v is not None for v in values):
            raise not_supported(op, what)
    out, lse = _infer(op, query, key, value, num_heads=num_heads, num_kv_heads=num_key_value_heads, scale=scale,
                      pre=pre_tokens, nxt=next_tokens, layout=input_layout, atten_mask=atten_mask,
                      pse_shift=pse_shift, q_lens=int_list(op, "actual_seq_lengths", actual_seq_lengths),
                      kv_lens=int_list(op, "actual_seq_lengths_kv", actual_seq_lengths_kv), sparse_mode=sparse_mode)
    if softmax_lse_flag:
        return out, lse.float()
    return out, torch.zeros(1, dtype=torch.float32, device=query.device)


def npu_fused_infer_attention_score_v2(query, key, value, *, query_rope=None, key_rope=None, pse_shift=None,
                                       atten_mask=None, actual_seq_qlen=None, actual_seq_kvlen=None,
                                       block_table=None, dequant_scale_query=None, dequant_scale_key=None,
                                       dequant_offset_key=None, dequant_scale_value=None, dequant_offset_value=None,
                                       dequant_scale_key_rope=None, quant_scale_out=None, quant_offset_out=None,
                                       quant_scale_p=None, learnable_sink=None, num_query_heads=1,
                                       num_key_value_heads=0, softmax_scale=1.0, pre_tokens=2147483647,
                                       next_tokens=2147483647, input_layout="BSH", sparse_mode=0, block_size=0,
                                       query_quant_mode=0, key_quant_mode=0, value_quant_mode=0, inner_precise=0,
                                       return_softmax_lse=False, query_dtype=None, key_dtype=None, value_dtype=None,
                                       query_rope_dtype=None, key_rope_dtype=None, key_shared_prefix_dtype=None,
                                       value_shared_prefix_dtype=None, dequant_scale_query_dtype=None,
                                       dequant_scale_key_dtype=None, dequant_scale_value_dtype=None,
                                       dequant_scale_key_rope_dtype=None, out_dtype=None, **more):
    """``torch_npu.npu_fused_infer_attention_score_v2``: the v1 computation under v2's argument names
    (``num_query_heads``, ``softmax_scale``, ``actual_seq_qlen``/``actual_seq_kvlen``,
    ``return_softmax_lse``); quantisation, sinks, MLA rope and paged caches are not implemented."""
    op = "npu_fused_infer_attention_score_v2"
    extra = {k for k, v in more.items() if v is not None and v is not False and v != 0}
    if any(v is not None for v in (dequant_scale_query, dequant_scale_key, dequant_offset_key, dequant_scale_value,
                                   dequant_offset_value, dequant_scale_key_rope, quant_scale_out, quant_offset_out,
                                   quant_scale_p)) or extra:
        raise not_supported(op, "quantisation parameters" + (f" / {sorted(extra)}" if extra else ""))
    if learnable_sink is not None:
        raise not_supported(op, "learnable_sink")
    if query_rope is not None or key_rope is not None:
        raise not_supported(op, "MLA rope inputs (query_rope/key_rope)")
    if block_table is not None:
        raise not_supported(op, "paged KV cache (block_table)")
    out, lse = _infer(op, query, key, value, num_heads=num_query_heads, num_kv_heads=num_key_value_heads,
                      scale=softmax_scale, pre=pre_tokens, nxt=next_tokens, layout=input_layout, atten_mask=atten_mask,
                      pse_shift=pse_shift, q_lens=int_list(op, "actual_seq_qlen", actual_seq_qlen),
                      kv_lens=int_list(op, "actual_seq_kvlen", actual_seq_kvlen), sparse_mode=sparse_mode)
    if out_dtype is not None:
        from ascend_compat.simulator.torch_npu.fused.quant import _dtype

        out = out.to(_dtype(out_dtype, out.dtype))
    if return_softmax_lse:
        return out, lse.float()
    return out, torch.zeros(1, dtype=torch.float32, device=query.device)
