"""flash-attn 2.7.4's attention functions on ``torch_npu.npu_fusion_attention``.

Same names, signatures, argument meanings, return values and errors as
``flash_attn.flash_attn_interface`` of flash-attn 2.7.4 (Dao-AILab/flash-attention), computed by
the fused NPU kernel:

* q/k/v ``(batch, seqlen, nheads, headdim)`` -> layout ``BSND``; varlen ``(total, nheads, headdim)``
  -> layout ``TND`` with ``actual_seq_qlen/kvlen = cu_seqlens[1:]`` (one device->host copy);
* ``softmax_scale`` (default ``1/sqrt(headdim)``) is passed as npu ``scale`` (which multiplies and
  would default to 1.0); ``dropout_p`` -> ``keep_prob = 1 - dropout_p``;
* ``causal`` -> ``sparse_mode=3`` (bottom-right aligned, as flash-attn >= 2.1) with the compressed
  2048x2048 mask; ``window_size=(left, right)`` -> band ``sparse_mode=4`` with
  ``pre_tockens=left, next_tockens=right`` counted from the bottom-right, i.e. query ``i`` sees keys
  ``[i + Sk - Sq - left, i + Sk - Sq + right]``; with ``causal`` the right side is 0, as in
  flash-attn. ``-1`` means unbounded;
* GQA/MQA: fewer K/V heads than Q heads, ``nheads % nheads_k == 0``;
* ``alibi_slopes`` ``(nheads,)`` or ``(batch, nheads)``: the bias ``-slope·|i + Sk - Sq - j|``
  (added to the scaled scores, as flash-attn does) goes through ``pse`` as ``bias / scale``
  because npu computes ``scale·(QKᵀ + pse)``; ``pse`` must have the inputs' dtype, so in
  float16/bfloat16 the bias is rounded to that dtype (flash-attn keeps it in float32). Varlen calls
  with ALiBi run one dense call per sequence;
* ``return_attn_probs=True`` returns ``(out, softmax_lse, S_dmask)``: ``softmax_lse`` is
  ``softmax_max + log(softmax_sum)`` in float32, ``(batch, nheads, seqlen_q)`` or
  ``(nheads, total_q)`` for varlen, ``+inf`` on rows with nothing to attend to (as flash-attn).
  ``S_dmask`` is always an empty tensor: the NPU kernel does not expose attention probabilities or
  its dropout pattern (flash-attn documents S_dmask as "for testing only");
* ``deterministic`` is accepted (the NPU backward has no separate deterministic switch).

Deliberate differences: float32 inputs are accepted (flash-attn rejects them; the NPU kernel
supports them). Rows with nothing to attend to give zero output, as flash-attn documents.

The low-level ``_flash_attn_forward`` / ``_flash_attn_backward`` (and their ``_wrapped_`` names, which
diffusers' flash backend and ring-attention code import) take flash-attn's positional arguments:
forward returns ``(out, softmax_lse (B, H, Sq), S_dmask (empty), rng_state (2,) int64)``; backward
writes the gradients into ``dq``/``dk``/``dv`` (recomputing the forward through the fused op's
autograd) and returns ``softmax_d = rowsum(dout * out)`` as ``(B, H, Sq)`` float32 (CUDA pads the last
dimension to a multiple of 128; ROCm does not). A backward with ``dropout_p > 0`` is refused: the NPU
kernel's dropout pattern cannot be replayed from ``rng_state``.

Not supported, raising ``NotImplementedError`` that names the feature and the alternative:
``softcap != 0``, paged KV (``block_table``), ``cache_leftpad`` together with new k/v. Gradients flow through the fused op's autograd
(``flash_attn_with_kvcache`` has no backward in flash-attn either).
"""
from __future__ import annotations

import math
from typing import Any, Optional

import torch

__all__ = [
    "_flash_attn_forward",
    "_flash_attn_backward",
    "_wrapped_flash_attn_forward",
    "_wrapped_flash_attn_backward",
    "flash_attn_func",
    "flash_attn_kvpacked_func",
    "flash_attn_qkvpacked_func",
    "flash_attn_varlen_func",
    "flash_attn_varlen_kvpacked_func",
    "flash_attn_varlen_qkvpacked_func",
    "flash_attn_with_kvcache",
]

_UNBOUNDED = 2147483647
_MASK_SIZE = 2048
_masks: dict = {}
_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_ALTERNATIVE = ('load the model with attn_implementation="sdpa" (or "eager"), or call '
                "torch.nn.functional.scaled_dot_product_attention")


def _unsupported(feature: str) -> NotImplementedError:
    return NotImplementedError(
        f"flash_attn on Ascend (ascend-compat): {feature} is not supported by torch_npu's fused attention, "
        f"so it is refused rather than computed differently. Alternative: {_ALTERNATIVE}.")


def _fusion_attention():
    try:
        import torch_npu
    except ImportError as exc:
        raise RuntimeError(
            "flash_attn on Ascend (ascend-compat) runs on torch_npu.npu_fusion_attention, but torch_npu "
            "cannot be imported. Install torch_npu on the Ascend machine, or use the simulated NPU "
            "(`ascend-compat run --simulate script.py` / ASCEND_COMPAT_SIMULATE=1).") from exc
    return torch_npu.npu_fusion_attention


def _causal_mask(device: torch.device) -> torch.Tensor:
    """The compressed 2048x2048 mask (True above the diagonal) that sparse modes 3/4 need; cached."""
    key = str(device)
    mask = _masks.get(key)
    if mask is None:
        mask = torch.ones(_MASK_SIZE, _MASK_SIZE, dtype=torch.bool, device=device).triu(1)
        _masks[key] = mask
    return mask


def _check_inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dropout_p: float, softcap: float,
                  ndim: int) -> None:
    if softcap != 0.0:
        raise _unsupported(f"softcap={softcap} (logit soft-capping, used by Gemma-2)")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"flash_attn: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != ndim:
            raise RuntimeError(f"flash_attn: {name} must have {ndim} dimensions, got shape {list(t.shape)}")
    if q.dtype not in _DTYPES:
        raise RuntimeError(f"FlashAttention only support fp16 and bf16 data type (and fp32 on Ascend), "
                           f"got {q.dtype}")
    if not (q.dtype == k.dtype == v.dtype):
        raise RuntimeError("query and key must have the same dtype" if q.dtype != k.dtype
                           else "query and value must have the same dtype")
    backend = torch._C._get_privateuse1_backend_name()
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.device.type != backend:
            raise RuntimeError(
                f"flash_attn on Ascend: {name} is on {t.device}, expected an {backend} tensor (FlashAttention "
                "only supports accelerator tensors). Move the inputs with .to('npu') or .cuda() under the shim.")
    if q.shape[-1] != k.shape[-1]:
        raise RuntimeError(f"flash_attn: q and k must have the same head dimension, got {q.shape[-1]} and "
                           f"{k.shape[-1]}")
    nq, nk = q.shape[-2], k.shape[-2]
    if nk == 0 or nq % nk != 0:
        raise RuntimeError("Number of heads in key/value must divide number of heads in query")
    if not 0.0 <= dropout_p < 1.0:
        raise RuntimeError(f"flash_attn: dropout_p must be in [0, 1), got {dropout_p}")


def _mask_args(causal: bool, window_size, seqlen_k: int, device) -> dict:
    """npu sparse-mode arguments for flash-attn's ``causal``/``window_size`` (see module docstring)."""
    try:
        left, right = (int(w) for w in window_size)
    except (TypeError, ValueError):
        raise TypeError(f"flash_attn: window_size must be a pair of ints (left, right), got {window_size!r}") from None
    if left >= seqlen_k:
        left = -1
    if right >= seqlen_k:
        right = -1
    if causal:
        right = 0
    if causal and left < 0:
        return {"atten_mask": _causal_mask(device), "sparse_mode": 3}
    if left < 0 and right < 0:
        return {"sparse_mode": 0}
    return {"atten_mask": _causal_mask(device), "sparse_mode": 4,
            "pre_tockens": left if left >= 0 else _UNBOUNDED,
            "next_tockens": right if right >= 0 else _UNBOUNDED}


def _scale(softmax_scale: Optional[float], q: torch.Tensor) -> float:
    return float(softmax_scale) if softmax_scale is not None else 1.0 / math.sqrt(q.shape[-1])


def _alibi_pse(slopes: torch.Tensor, batch: int, nheads: int, sq: int, sk: int, scale: float,
               dtype: torch.dtype, device) -> torch.Tensor:
    """pse [B|1, N, Sq, Sk] = -slope·|i + Sk - Sq - j| / scale (npu adds pse before scaling)."""
    if slopes.dtype != torch.float32:
        raise RuntimeError("ALiBi slopes must have dtype fp32")
    if slopes.dim() == 1:
        slopes = slopes.unsqueeze(0)
    if slopes.dim() != 2 or slopes.shape[1] != nheads or slopes.shape[0] not in (1, batch):
        raise RuntimeError(f"ALiBi slopes tensor must have shape (nheads,) or (batch_size, nheads) = ({nheads},) or "
                           f"({batch}, {nheads}), got {list(slopes.shape)}")
    i = torch.arange(sq, device=device, dtype=torch.float32).view(sq, 1)
    j = torch.arange(sk, device=device, dtype=torch.float32).view(1, sk)
    dist = (i + (sk - sq) - j).abs()
    bias = -slopes.to(device).view(slopes.shape[0], nheads, 1, 1) * dist
    return (bias / scale).to(dtype)


def _lse(smax: torch.Tensor, ssum: torch.Tensor) -> torch.Tensor:
    m, s = smax[..., 0].float(), ssum[..., 0].float()
    lse = m + torch.log(s)
    return torch.where(s > 0, lse, torch.full_like(lse, float("inf")))


def _empty_probs(q: torch.Tensor) -> torch.Tensor:
    return torch.empty((0,), dtype=q.dtype, device=q.device)


def _dense(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes, want_lse):
    """Attention on (B, S, N, D) tensors; returns (out, lse or None)."""
    _check_inputs(q, k, v, dropout_p, softcap, 4)
    b, sq, nq, _ = q.shape
    sk = k.shape[1]
    scale = _scale(softmax_scale, q)
    kwargs: dict[str, Any] = _mask_args(causal, window_size, sk, q.device)
    if alibi_slopes is not None:
        kwargs["pse"] = _alibi_pse(alibi_slopes, b, nq, sq, sk, scale, q.dtype, q.device)
    res = _fusion_attention()(q, k, v, nq, "BSND", scale=scale, keep_prob=1.0 - dropout_p, **kwargs)
    return res[0], (_lse(res[1], res[2]) if want_lse else None)


def _host_cumulative(name: str, cu: torch.Tensor) -> list:
    if not isinstance(cu, torch.Tensor) or cu.dim() != 1 or cu.numel() < 2:
        raise RuntimeError(f"flash_attn: {name} must be a 1-D tensor of batch_size + 1 cumulative lengths")
    if cu.dtype != torch.int32:
        raise RuntimeError(f"{name} must have dtype int32")
    values = [int(x) for x in cu.tolist()]  # npu's varlen kernel takes host lists (one sync)
    if values[0] != 0 or any(b < a for a, b in zip(values, values[1:])):
        raise RuntimeError(f"flash_attn: {name}={values} must start at 0 and be non-decreasing")
    return values


def _varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, dropout_p, softmax_scale, causal, window_size, softcap,
            alibi_slopes, want_lse, block_table=None):
    """Attention on packed (total, N, D) tensors; returns (out, lse (N, total_q) or None)."""
    if block_table is not None:
        raise _unsupported("paged KV cache (block_table)")
    _check_inputs(q, k, v, dropout_p, softcap, 3)
    cq = _host_cumulative("cu_seqlens_q", cu_seqlens_q)
    ck = _host_cumulative("cu_seqlens_k", cu_seqlens_k)
    if len(cq) != len(ck):
        raise RuntimeError("flash_attn: cu_seqlens_q and cu_seqlens_k must have the same length (batch_size + 1)")
    if cq[-1] > q.shape[0] or ck[-1] > k.shape[0]:
        raise RuntimeError(f"flash_attn: cu_seqlens end at {cq[-1]}/{ck[-1]} tokens but q/k hold "
                           f"{q.shape[0]}/{k.shape[0]}")
    if alibi_slopes is not None:
        return _varlen_per_sequence(q, k, v, cq, ck, dropout_p, softmax_scale, causal, window_size, alibi_slopes,
                                    want_lse)
    nq = q.shape[1]
    scale = _scale(softmax_scale, q)
    lens_k = [b - a for a, b in zip(ck, ck[1:])]
    kwargs = _mask_args(causal, window_size, max(lens_k) if lens_k else 0, q.device)
    res = _fusion_attention()(q, k, v, nq, "TND", scale=scale, keep_prob=1.0 - dropout_p,
                              actual_seq_qlen=cq[1:], actual_seq_kvlen=ck[1:], **kwargs)
    lse = None
    if want_lse:
        t = q.shape[0]
        lse = _lse(res[1].reshape(nq, t, -1), res[2].reshape(nq, t, -1))  # NTD data in a [T, N, 8] tensor
    return res[0], lse


def _varlen_per_sequence(q, k, v, cq, ck, dropout_p, softmax_scale, causal, window_size, alibi_slopes, want_lse):
    """Varlen attention as one dense call per sequence (for features the TND kernel lacks: ALiBi)."""
    slopes = alibi_slopes if alibi_slopes.dim() == 2 else alibi_slopes.unsqueeze(0)
    outs, lses = [], []
    for i in range(len(cq) - 1):
        qi = q[cq[i]:cq[i + 1]].unsqueeze(0)
        ki, vi = k[ck[i]:ck[i + 1]].unsqueeze(0), v[ck[i]:ck[i + 1]].unsqueeze(0)
        if qi.shape[1] == 0:
            continue
        if ki.shape[1] == 0:
            outs.append(torch.zeros_like(qi[0]))
            lses.append(torch.full((q.shape[1], qi.shape[1]), float("inf"), device=q.device))
            continue
        o, lse = _dense(qi, ki, vi, dropout_p, softmax_scale, causal, window_size, 0.0,
                        slopes[i if slopes.shape[0] > 1 else 0], want_lse)
        outs.append(o[0])
        if want_lse:
            lses.append(lse[0])
    tail = q.shape[0] - cq[-1]
    if tail:
        outs.append(torch.zeros_like(q[cq[-1]:]))
        lses.append(torch.full((q.shape[1], tail), float("inf"), device=q.device))
    out = torch.cat(outs, 0) if outs else torch.zeros_like(q)
    return out, (torch.cat(lses, 1) if want_lse and lses else None)


def _result(out, lse, q, return_attn_probs):
    return (out, lse, _empty_probs(q)) if return_attn_probs else out


# ----------------------------------------------------------------------------- low-level API
def _flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size_left, window_size_right, softcap,
                        alibi_slopes, return_softmax):
    """flash-attn's low-level forward: ``(out, softmax_lse (B, H, Sq) float32, S_dmask (empty), rng_state)``."""
    out, lse = _dense(q, k, v, dropout_p, softmax_scale, causal, (window_size_left, window_size_right), softcap,
                      alibi_slopes, True)
    return out, lse, _empty_probs(q), torch.zeros(2, dtype=torch.int64, device=q.device)


def _flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p, softmax_scale, causal,
                         window_size_left, window_size_right, softcap, alibi_slopes, deterministic, rng_state=None):
    """flash-attn's low-level backward: the gradients of q, k, v written into ``dq``, ``dk``, ``dv`` (those
    given), and ``softmax_d = rowsum(dout * out)`` returned as ``(B, H, Sq)`` float32."""
    if dropout_p:
        raise _unsupported("_flash_attn_backward with dropout (the NPU kernel's dropout pattern cannot be "
                           "replayed from rng_state)")
    with torch.enable_grad():
        leaves = [t.detach().requires_grad_() for t in (q, k, v)]
        recomputed, _ = _dense(*leaves, 0.0, softmax_scale, causal, (window_size_left, window_size_right), softcap,
                               alibi_slopes, False)
        grads = torch.autograd.grad(recomputed, leaves, dout)
    for dest, grad in zip((dq, dk, dv), grads):
        if dest is not None:
            dest.copy_(grad)
    return (dout.float() * out.float()).sum(-1).transpose(1, 2).contiguous()


_wrapped_flash_attn_forward = _flash_attn_forward
_wrapped_flash_attn_backward = _flash_attn_backward


# ----------------------------------------------------------------------------- public API
def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash-attn's ``flash_attn_func``: q ``(B, Sq, H, D)``, k/v ``(B, Sk, Hk, D)`` -> out ``(B, Sq, H, D)``;
    with ``return_attn_probs`` ``(out, softmax_lse (B, H, Sq), S_dmask)``. See the module docstring."""
    out, lse = _dense(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                      return_attn_probs)
    return _result(out, lse, q, return_attn_probs)


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                              softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash-attn's ``flash_attn_qkvpacked_func``: qkv ``(B, S, 3, H, D)``."""
    _packed_check("qkv", qkv, 5, 3)
    q, k, v = qkv.unbind(2)
    return flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                           deterministic, return_attn_probs)


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                             softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash-attn's ``flash_attn_kvpacked_func``: q ``(B, Sq, H, D)``, kv ``(B, Sk, 2, Hk, D)``."""
    _packed_check("kv", kv, 5, 2)
    k, v = kv.unbind(2)
    return flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                           deterministic, return_attn_probs)


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None):
    """flash-attn's ``flash_attn_varlen_func``: packed q ``(total_q, H, D)``, k/v ``(total_k, Hk, D)``,
    ``cu_seqlens_*`` int32 ``(batch + 1,)``; lse is ``(H, total_q)``. ``max_seqlen_*`` are not needed."""
    out, lse = _varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, dropout_p, softmax_scale, causal, window_size, softcap,
                       alibi_slopes, return_attn_probs, block_table)
    return _result(out, lse, q, return_attn_probs)


def flash_attn_varlen_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p=0.0, softmax_scale=None, causal=False,
                                     window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
                                     return_attn_probs=False):
    """flash-attn's ``flash_attn_varlen_qkvpacked_func``: qkv ``(total, 3, H, D)``."""
    _packed_check("qkv", qkv, 4, 3)
    q, k, v = qkv.unbind(1)
    return flash_attn_varlen_func(q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen, dropout_p,
                                  softmax_scale, causal, window_size, softcap, alibi_slopes, deterministic,
                                  return_attn_probs)


def flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                                    softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash-attn's ``flash_attn_varlen_kvpacked_func``: q ``(total_q, H, D)``, kv ``(total_k, 2, Hk, D)``."""
    _packed_check("kv", kv, 4, 2)
    k, v = kv.unbind(1)
    return flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                                  softmax_scale, causal, window_size, softcap, alibi_slopes, deterministic,
                                  return_attn_probs)


def _packed_check(name: str, t, ndim: int, n: int) -> None:
    axis = ndim - 3
    if not isinstance(t, torch.Tensor) or t.dim() != ndim or t.shape[axis] != n:
        shape = list(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
        raise RuntimeError(f"flash_attn: {name} must have {ndim} dimensions with size {n} at dim {axis}, got {shape}")


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None,
                            cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, block_table=None,
                            softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                            rotary_interleaved=True, alibi_slopes=None, num_splits=0, return_softmax_lse=False):
    """flash-attn's ``flash_attn_with_kvcache`` (decoding with a contiguous KV cache).

    q ``(B, Sq, H, D)``; k_cache/v_cache ``(B_cache, S_cache, Hk, D)``; optional new k/v
    ``(B, S_new, Hk, D)`` are written into the cache *in place* at ``cache_seqlens`` (int or int32
    ``(B,)``); ``cache_batch_idx`` selects cache rows. Attention runs over each sequence's first
    ``cache_seqlens + S_new`` cache entries (from ``cache_leftpad`` on). Returns out, or
    ``(out, softmax_lse (B, H, Sq))``. Paged KV (``block_table``) raises
    NotImplementedError; ``num_splits`` only tunes speed and is ignored. ``rotary_cos/rotary_sin``
    ``(seqlen_ro, rotary_dim / 2)`` rotate the new k at positions ``cache_seqlens + i`` and q at the
    same positions when causal/local, else all q tokens at ``cache_seqlens`` (flash-attn's rule).
    """
    if block_table is not None:
        raise _unsupported("paged KV cache (block_table) in flash_attn_with_kvcache")
    if (rotary_cos is None) != (rotary_sin is None):
        raise RuntimeError("flash_attn_with_kvcache: pass both rotary_cos and rotary_sin, or neither")
    if rotary_cos is not None and k is None:
        raise RuntimeError("flash_attn_with_kvcache: rotary_cos/rotary_sin apply only when new k and v are passed in")
    if (k is None) != (v is None):
        raise RuntimeError("flash_attn_with_kvcache: pass both k and v, or neither")
    if k is not None and cache_seqlens is None:
        raise RuntimeError("If key is supplied, seqlens_k must also be passed in")
    _check_inputs(q, k_cache, v_cache, 0.0, softcap, 4)
    b, sq, nq, _ = q.shape
    s_cache = k_cache.shape[1]
    dev = q.device
    rows = (list(range(b)) if cache_batch_idx is None
            else [int(i) for i in cache_batch_idx.tolist()])
    if len(rows) != b:
        raise RuntimeError(f"flash_attn_with_kvcache: cache_batch_idx must have {b} entries, got {len(rows)}")
    if cache_seqlens is None:
        lens = [s_cache] * b
    elif isinstance(cache_seqlens, int):
        lens = [cache_seqlens] * b
    else:
        if cache_seqlens.dtype != torch.int32:
            raise RuntimeError("seqlens_k must have dtype int32")
        lens = [int(x) for x in cache_seqlens.tolist()]
    starts = [0] * b if cache_leftpad is None else [int(x) for x in cache_leftpad.tolist()]
    if k is not None:
        if cache_leftpad is not None:
            raise _unsupported("cache_leftpad together with new k/v in flash_attn_with_kvcache")
        s_new = k.shape[1]
        if rotary_cos is not None:
            local = causal or tuple(window_size) != (-1, -1)
            k = _rotary(k, rotary_cos, rotary_sin, lens, True, rotary_interleaved)
            q = _rotary(q, rotary_cos, rotary_sin, lens, local, rotary_interleaved)
        if k.dtype != k_cache.dtype or v.dtype != v_cache.dtype:
            raise RuntimeError("flash_attn_with_kvcache: k/v must have the dtype of k_cache/v_cache")
        with torch.no_grad():
            for i, row in enumerate(rows):
                if lens[i] + s_new > s_cache:
                    raise RuntimeError(f"flash_attn_with_kvcache: cache of length {s_cache} cannot hold "
                                       f"{lens[i]} + {s_new} tokens for batch {i}")
                k_cache[row, lens[i]:lens[i] + s_new] = k[i]
                v_cache[row, lens[i]:lens[i] + s_new] = v[i]
        lens = [n + s_new for n in lens]
    keys = [k_cache[row, starts[i]:lens[i]] for i, row in enumerate(rows)]
    vals = [v_cache[row, starts[i]:lens[i]] for i, row in enumerate(rows)]
    cu_k = torch.tensor([0] + _cumsum([t.shape[0] for t in keys]), dtype=torch.int32)
    cu_q = torch.tensor([sq * i for i in range(b + 1)], dtype=torch.int32)
    out, lse = _varlen(q.reshape(b * sq, nq, -1), torch.cat(keys, 0), torch.cat(vals, 0), cu_q, cu_k, 0.0,
                       softmax_scale, causal, window_size, softcap, alibi_slopes, return_softmax_lse)
    out = out.reshape(b, sq, nq, -1)
    if return_softmax_lse:
        return out, lse.reshape(nq, b, sq).permute(1, 0, 2).contiguous()
    return out


def _rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, starts: list, advancing: bool,
            interleaved: bool) -> torch.Tensor:
    """flash-attn's in-kernel rotary: token ``t`` of batch ``b`` is rotated at position ``starts[b] + t``
    (``advancing``) or ``starts[b]`` for every token; the first ``2·cos.shape[1]`` dims rotate, in
    (0,1),(2,3)... pairs (``interleaved``) or GPT-NeoX halves; the rest pass through."""
    b, s, _, d = x.shape
    half = cos.shape[1]
    rd = 2 * half
    if cos.shape != sin.shape or rd > d:
        raise RuntimeError(f"flash_attn_with_kvcache: rotary_cos/rotary_sin must both be (seqlen_ro, rotary_dim / 2) "
                           f"with rotary_dim <= headdim {d}, got {list(cos.shape)} and {list(sin.shape)}")
    offsets = torch.arange(s) if advancing else torch.zeros(s, dtype=torch.long)
    pos = torch.tensor(starts).view(b, 1) + offsets.view(1, s)
    if int(pos.max()) >= cos.shape[0]:
        raise RuntimeError(f"flash_attn_with_kvcache: rotary tables hold {cos.shape[0]} positions, position "
                           f"{int(pos.max())} is needed")
    pos = pos.to(cos.device)
    c = cos[pos].unsqueeze(2).float()  # [b, s, 1, half]
    sn = sin[pos].unsqueeze(2).float()
    rot = x[..., :rd].float()
    if interleaved:
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
        out = torch.stack([x1 * c - x2 * sn, x1 * sn + x2 * c], dim=-1).flatten(-2)
    else:
        x1, x2 = rot[..., :half], rot[..., half:]
        out = torch.cat([x1 * c - x2 * sn, x1 * sn + x2 * c], dim=-1)
    return torch.cat([out.to(x.dtype), x[..., rd:]], dim=-1)


def _cumsum(values: list) -> list:
    out, total = [], 0
    for x in values:
        total += x
        out.append(total)
    return out
