"""flash-attn 2.7.4's rotary embedding helpers (``flash_attn.layers.rotary`` and
``flash_attn.ops.triton.rotary.apply_rotary``) in plain torch, which runs natively on the NPU.

Code written for flash-attn (ModernBERT-style models) imports these next to the attention
functions; the Triton kernels cannot run on Ascend.

* ``apply_rotary(x, cos, sin, seqlen_offsets=0, cu_seqlens=None, max_seqlen=None,
  interleaved=False, inplace=False, conjugate=False)``: x ``(B, S, H, D)`` or, with ``cu_seqlens``,
  ``(total, H, D)``; cos/sin ``(seqlen_ro, rotary_dim / 2)`` with x's dtype; token ``t`` of
  sequence ``b`` uses row ``t + seqlen_offsets[b]`` (an int offsets every sequence). The first
  ``rotary_dim`` features rotate as GPT-NeoX halves, or (0,1),(2,3)... pairs when
  ``interleaved``; ``conjugate`` rotates backwards. Computed in float32; differentiable.
* ``apply_rotary_emb`` (= ``apply_rotary_emb_func``), ``apply_rotary_emb_qkv_`` (in place on
  ``(B, S, 3, H, D)`` or ``(B, S, Hq + 2·Hk, D)`` with ``num_heads_q``), ``apply_rotary_emb_kv_``,
  ``rotate_half``, ``apply_rotary_emb_torch`` and ``RotaryEmbedding(dim, base=10000.0,
  interleaved=False, scale_base=None, pos_idx_in_fp32=True, device=None)`` (``scale_base``,
  i.e. XPos, raises NotImplementedError).
"""
from __future__ import annotations

from typing import Optional, Union

import torch

__all__ = [
    "RotaryEmbedding",
    "apply_rotary",
    "apply_rotary_emb",
    "apply_rotary_emb_func",
    "apply_rotary_emb_kv_",
    "apply_rotary_emb_qkv_",
    "apply_rotary_emb_torch",
    "rotate_half",
]


def rotate_half(x: torch.Tensor, interleaved: bool = False) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) over halves, or over (even, odd) pairs when ``interleaved``."""
    if not interleaved:
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_rotary_emb_torch(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool = False):
    """Reference rotary on x ``(B, S, H, D)`` with cos/sin ``(S, rd/2)`` or ``(B, S, rd/2)``."""
    rd = cos.shape[-1] * 2
    if rd > x.shape[-1]:
        raise RuntimeError(f"rotary_dim {rd} exceeds headdim {x.shape[-1]}")
    expand = (lambda t: t.repeat_interleave(2, -1)) if interleaved else (lambda t: torch.cat([t, t], -1))
    c, s = expand(cos).unsqueeze(-2), expand(sin).unsqueeze(-2)
    return torch.cat([x[..., :rd] * c + rotate_half(x[..., :rd], interleaved) * s, x[..., rd:]], dim=-1)


def _positions(x, seqlen_offsets, cu_seqlens, device) -> torch.Tensor:
    if cu_seqlens is None:
        b, s = x.shape[0], x.shape[1]
        pos = torch.arange(s, device=device).view(1, s).expand(b, s)
    else:
        bounds = [int(c) for c in cu_seqlens.tolist()]
        pos = torch.cat([torch.arange(e - a, device=device) for a, e in zip(bounds, bounds[1:])]
                        + [torch.zeros(x.shape[0] - bounds[-1], dtype=torch.long, device=device)])
    if isinstance(seqlen_offsets, int):
        return pos + seqlen_offsets
    offsets = seqlen_offsets.to(device=device, dtype=torch.long)
    if cu_seqlens is None:
        return pos + offsets.view(-1, 1)
    lengths = (cu_seqlens[1:] - cu_seqlens[:-1]).to(device=device, dtype=torch.long)
    per_token = torch.repeat_interleave(offsets, lengths)
    return pos + torch.cat([per_token, torch.zeros(pos.shape[0] - per_token.shape[0], dtype=torch.long,
                                                   device=device)])


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, seqlen_offsets: Union[int, torch.Tensor] = 0,
                 cu_seqlens: Optional[torch.Tensor] = None, max_seqlen: Optional[int] = None,
                 interleaved: bool = False, inplace: bool = False, conjugate: bool = False) -> torch.Tensor:
    """flash-attn's ``flash_attn.ops.triton.rotary.apply_rotary``; see the module docstring."""
    if cos.shape != sin.shape or cos.dim() != 2:
        raise RuntimeError(f"rotary: cos and sin must both be (seqlen_ro, rotary_dim / 2), got {list(cos.shape)} and "
                           f"{list(sin.shape)}")
    if x.dtype != cos.dtype or cos.dtype != sin.dtype:
        raise RuntimeError(f"Input and cos/sin must have the same dtype, got {x.dtype} and {cos.dtype}")
    rd = cos.shape[1] * 2
    if rd > x.shape[-1]:
        raise RuntimeError("rotary_dim must be <= headdim")
    if x.dim() != (3 if cu_seqlens is not None else 4):
        raise RuntimeError(f"rotary: x must be (batch, seqlen, nheads, headdim), or (total, nheads, headdim) with "
                           f"cu_seqlens; got {list(x.shape)}")
    pos = _positions(x, seqlen_offsets, cu_seqlens, cos.device)
    if pos.numel() and int(pos.max()) >= cos.shape[0]:
        raise RuntimeError(f"rotary: seqlen_ro ({cos.shape[0]}) must be >= seqlen + offset ({int(pos.max()) + 1})")
    c = cos[pos].float().unsqueeze(-2)
    s = sin[pos].float().unsqueeze(-2)
    if conjugate:
        s = -s
    rot = x[..., :rd].float()
    if interleaved:
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
        out = torch.stack([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1).flatten(-2)
    else:
        x1, x2 = rot[..., : rd // 2], rot[..., rd // 2:]
        out = torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1)
    out = out.to(x.dtype)
    if inplace:
        x[..., :rd] = out
        return x
    return torch.cat([out, x[..., rd:]], dim=-1)


def apply_rotary_emb(x, cos, sin, interleaved=False, inplace=False, seqlen_offsets=0, cu_seqlens=None,
                     max_seqlen=None):
    """flash-attn's ``apply_rotary_emb`` (rotary on the first rotary_dim features of x)."""
    return apply_rotary(x, cos, sin, seqlen_offsets=seqlen_offsets, cu_seqlens=cu_seqlens, max_seqlen=max_seqlen,
                        interleaved=interleaved, inplace=inplace)


apply_rotary_emb_func = apply_rotary_emb


def apply_rotary_emb_qkv_(qkv, cos, sin, cos_k=None, sin_k=None, interleaved=False, seqlen_offsets=0,
                          num_heads_q=None):
    """Rotate Q and K of a packed qkv *in place*; returns qkv."""
    if qkv.dim() == 5:
        if qkv.shape[2] != 3:
            raise RuntimeError(f"apply_rotary_emb_qkv_: qkv must be (B, S, 3, H, D), got {list(qkv.shape)}")
        q, k = qkv[:, :, 0], qkv[:, :, 1]
    else:
        if num_heads_q is None:
            raise RuntimeError("apply_rotary_emb_qkv_: num_heads_q is required for (B, S, Hq + 2*Hk, D) qkv")
        hk = (qkv.shape[2] - num_heads_q) // 2
        if qkv.shape[2] != num_heads_q + 2 * hk:
            raise RuntimeError(f"apply_rotary_emb_qkv_: {qkv.shape[2]} heads is not num_heads_q + 2 * num_heads_k")
        q, k = qkv[:, :, :num_heads_q], qkv[:, :, num_heads_q:num_heads_q + hk]
    apply_rotary(q, cos, sin, seqlen_offsets, interleaved=interleaved, inplace=True)
    apply_rotary(k, cos if cos_k is None else cos_k, sin if sin_k is None else sin_k, seqlen_offsets,
                 interleaved=interleaved, inplace=True)
    return qkv


def apply_rotary_emb_kv_(kv, cos, sin, interleaved=False, seqlen_offsets=0):
    """Rotate K of a packed kv ``(B, S, 2, H, D)`` *in place*; returns kv."""
    if kv.dim() != 5 or kv.shape[2] != 2:
        raise RuntimeError(f"apply_rotary_emb_kv_: kv must be (B, S, 2, H, D), got {list(kv.shape)}")
    apply_rotary(kv[:, :, 0], cos, sin, seqlen_offsets, interleaved=interleaved, inplace=True)
    return kv


class RotaryEmbedding(torch.nn.Module):
    """flash-attn's ``RotaryEmbedding`` (without XPos); cos/sin tables cached per length/device/dtype."""

    def __init__(self, dim: int, base=10000.0, interleaved=False, scale_base=None, pos_idx_in_fp32=True,
                 device=None):
        super().__init__()
        if scale_base is not None:
            raise NotImplementedError("flash_attn RotaryEmbedding(scale_base=...) (XPos) is not provided by "
                                      "ascend-compat's drop-in.")
        self.dim = dim
        self.base = float(base)
        self.pos_idx_in_fp32 = pos_idx_in_fp32
        self.register_buffer("inv_freq", self._compute_inv_freq(device), persistent=False)
        self.interleaved = interleaved
        self.scale_base = None
        self.register_buffer("scale", None, persistent=False)
        self._seq_len_cached = 0
        self._cos_cached = self._sin_cached = self._cos_k_cached = self._sin_k_cached = None

    def _compute_inv_freq(self, device=None):
        return 1.0 / (self.base ** (torch.arange(0, self.dim, 2, device=device, dtype=torch.float32) / self.dim))

    def _update_cos_sin_cache(self, seqlen, device=None, dtype=None):
        stale = (seqlen > self._seq_len_cached or self._cos_cached is None or self._cos_cached.device != device
                 or self._cos_cached.dtype != dtype or (self.training and self._cos_cached.is_inference()))
        if not stale:
            return
        self._seq_len_cached = seqlen
        t = torch.arange(seqlen, device=device, dtype=torch.float32)
        inv_freq = self.inv_freq if self.inv_freq.dtype == torch.float32 else self._compute_inv_freq(device)
        freqs = torch.outer(t, inv_freq.to(device))
        self._cos_cached = torch.cos(freqs).to(dtype)
        self._sin_cached = torch.sin(freqs).to(dtype)

    def forward(self, qkv, kv=None, seqlen_offset: Union[int, torch.Tensor] = 0, max_seqlen=None, num_heads_q=None):
        """Rotate q/k of ``qkv`` (and k of ``kv``) in place at positions ``seqlen_offset + i``."""
        seqlen = qkv.shape[1]
        if max_seqlen is not None:
            self._update_cos_sin_cache(max_seqlen, device=qkv.device, dtype=qkv.dtype)
        elif isinstance(seqlen_offset, int):
            self._update_cos_sin_cache(seqlen + seqlen_offset, device=qkv.device, dtype=qkv.dtype)
        if kv is None:
            return apply_rotary_emb_qkv_(qkv, self._cos_cached, self._sin_cached, interleaved=self.interleaved,
                                         seqlen_offsets=seqlen_offset, num_heads_q=num_heads_q)
        q = apply_rotary_emb(qkv, self._cos_cached, self._sin_cached, interleaved=self.interleaved, inplace=True,
                             seqlen_offsets=seqlen_offset)
        kv = apply_rotary_emb_kv_(kv, self._cos_cached, self._sin_cached, interleaved=self.interleaved,
                                  seqlen_offsets=seqlen_offset)
        return q, kv
