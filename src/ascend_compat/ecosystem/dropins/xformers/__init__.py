"""ascend-compat's xformers drop-in: ``xformers.ops.memory_efficient_attention`` on ``torch_npu.npu_fusion_attention``.

Emulated API: xformers **0.0.29** (``xformers.ops`` / ``xformers.ops.fmha``).
``memory_efficient_attention(query, key, value, attn_bias=None, p=0.0, scale=None, *, op=None,
output_dtype=None)`` with query ``[B, Mq, H, K]`` (also ``[B, M, K]`` and ``[B, M, G, H, K]``),
key/value ``[B, Mk, H(k), K/Kv]``; ``scale`` defaults to ``1/sqrt(K)`` and is passed as the npu
``scale``; ``p`` is the dropout probability (``keep_prob = 1 - p``). ``attn_bias``:

* ``None`` -> full attention; a ``torch.Tensor`` additive bias broadcastable to ``[B, H, Mq, Mk]``
  -> ``pse = bias / scale`` (npu adds pse before scaling; rounded to the input dtype);
* ``LowerTriangularMask`` -> sparse_mode 2 (top-left causal); ``LowerTriangularFromBottomRightMask``
  -> 3; ``LowerTriangularMaskWithTensorBias`` -> 2 plus pse; ``LocalAttentionFromBottomRightMask``
  -> band mode 4;
* ``BlockDiagonalMask`` / ``BlockDiagonalCausalMask`` / ``BlockDiagonalCausalFromBottomRightMask``
  (batch 1, packed sequences) -> layout TND with the block lengths, modes 0 / 2 / 3.

Other bias types (padded-keys and paged block-diagonal masks, ...) raise ``NotImplementedError``
naming the type and suggesting ``torch.nn.functional.scaled_dot_product_attention``. ``op`` is
accepted and ignored (there is one kernel). Key/value may have fewer heads than the query (GQA),
which xformers itself only allows through the 5-D layout.
"""
from __future__ import annotations

import math

import torch

from ascend_compat.ecosystem.dropins.xformers import attn_bias
from ascend_compat.ecosystem.dropins.xformers.attn_bias import (
    AttentionBias,
    BlockDiagonalCausalFromBottomRightMask,
    BlockDiagonalCausalMask,
    BlockDiagonalMask,
    LocalAttentionFromBottomRightMask,
    LowerTriangularFromBottomRightMask,
    LowerTriangularMask,
    LowerTriangularMaskWithTensorBias,
)

__version__ = "0.0.29"

__all__ = [
    *attn_bias.__all__,  # the bias classes, re-exported
    "MemoryEfficientAttentionCutlassOp",
    "MemoryEfficientAttentionFlashAttentionOp",
    "attn_bias",
    "memory_efficient_attention",
    "memory_efficient_attention_forward",
    "unbind",
]

_MASK = 2048
_UNBOUNDED = 2147483647
_masks: dict = {}


class _Op:
    """Stand-in for xformers' operator tuples (accepted as ``op=`` and ignored)."""

    def __init__(self, name: str) -> None:
        self.NAME = name

    def __repr__(self) -> str:
        return f"<ascend-compat xformers op {self.NAME}: runs torch_npu.npu_fusion_attention>"


MemoryEfficientAttentionCutlassOp = _Op("cutlass")
MemoryEfficientAttentionFlashAttentionOp = _Op("flash")


def unbind(x: torch.Tensor, dim: int) -> tuple:
    """xformers' ``unbind`` (= ``torch.unbind``)."""
    return torch.unbind(x, dim)


def _compressed(device) -> torch.Tensor:
    key = str(device)
    if key not in _masks:
        _masks[key] = torch.ones(_MASK, _MASK, dtype=torch.bool, device=device).triu(1)
    return _masks[key]


def _unsupported(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"xformers on Ascend (ascend-compat): {what} is not supported by torch_npu's fused attention; use "
        "torch.nn.functional.scaled_dot_product_attention with an explicit mask instead.")


def memory_efficient_attention(query, key, value, attn_bias=None, p=0.0, scale=None, *, op=None, output_dtype=None):
    """xformers' ``memory_efficient_attention``; see the module docstring. Differentiable."""
    if output_dtype is not None:
        raise _unsupported("output_dtype")
    ndim = query.dim()
    if ndim == 3:  # [B, M, K]: one head
        out = memory_efficient_attention(query.unsqueeze(2), key.unsqueeze(2), value.unsqueeze(2), attn_bias, p,
                                         scale)
        return out.squeeze(2)
    if ndim == 5:  # [B, M, G, H, K]: groups folded into heads
        b, mq, g, h, _ = query.shape
        fold = [t.reshape(t.shape[0], t.shape[1], g * h, t.shape[-1]) for t in (query, key, value)]
        out = memory_efficient_attention(*fold, attn_bias=attn_bias, p=p, scale=scale)
        return out.reshape(b, mq, g, h, -1)
    if ndim != 4 or key.dim() != 4 or value.dim() != 4:
        raise ValueError(f"memory_efficient_attention: query/key/value must be [B, M, H, K] (or [B, M, K], "
                         f"[B, M, G, H, K]); got {list(query.shape)}, {list(key.shape)}, {list(value.shape)}")
    if not (query.dtype == key.dtype == value.dtype):
        raise ValueError(f"memory_efficient_attention: query/key/value dtypes differ: {query.dtype}, {key.dtype}, "
                         f"{value.dtype}")
    if not 0.0 <= p < 1.0:
        raise ValueError(f"memory_efficient_attention: dropout p must be in [0, 1), got {p}")
    import torch_npu

    b, mq, h, k_dim = query.shape
    mk = key.shape[1]
    scale = float(scale) if scale is not None else 1.0 / math.sqrt(k_dim)
    kwargs: dict = {"scale": scale, "keep_prob": 1.0 - p}
    if isinstance(attn_bias, BlockDiagonalMask):
        return _block_diagonal(torch_npu, query, key, value, attn_bias, kwargs)
    if attn_bias is None:
        pass
    elif isinstance(attn_bias, torch.Tensor):
        kwargs["pse"] = _pse(attn_bias, b, h, mq, mk, scale, query)
    elif type(attn_bias) in (LowerTriangularMask, LowerTriangularMaskWithTensorBias):
        kwargs.update(atten_mask=_compressed(query.device), sparse_mode=2)
        if isinstance(attn_bias, LowerTriangularMaskWithTensorBias):
            kwargs["pse"] = _pse(attn_bias._bias, b, h, mq, mk, scale, query)
    elif type(attn_bias) is LowerTriangularFromBottomRightMask:
        kwargs.update(atten_mask=_compressed(query.device), sparse_mode=3)
    elif type(attn_bias) is LocalAttentionFromBottomRightMask:
        kwargs.update(atten_mask=_compressed(query.device), sparse_mode=4, pre_tockens=attn_bias.window_left,
                      next_tockens=attn_bias.window_right)
    else:
        raise _unsupported(f"attn_bias of type {type(attn_bias).__name__}")
    return torch_npu.npu_fusion_attention(query, key, value, h, "BSND", **kwargs)[0]


memory_efficient_attention_forward = memory_efficient_attention


def _pse(bias: torch.Tensor, b, h, mq, mk, scale, query) -> torch.Tensor:
    try:
        full = bias.expand(b, h, mq, mk)
    except RuntimeError:
        raise ValueError(f"memory_efficient_attention: attn_bias of shape {list(bias.shape)} does not broadcast to "
                         f"[B, H, Mq, Mk] = {[b, h, mq, mk]}") from None
    return (full / scale).to(query.dtype).contiguous()


def _block_diagonal(torch_npu, query, key, value, bias: BlockDiagonalMask, kwargs: dict) -> torch.Tensor:
    if query.shape[0] != 1:
        raise ValueError(f"memory_efficient_attention: a {type(bias).__name__} needs batch size 1 (sequences packed "
                         f"along M), got query of shape {list(query.shape)}")
    qs, ks = bias.q_seqinfo.seqstart_py, bias.k_seqinfo.seqstart_py
    if qs[-1] != query.shape[1] or ks[-1] != key.shape[1]:
        raise ValueError(f"memory_efficient_attention: the mask covers {qs[-1]} queries / {ks[-1]} keys, the inputs "
                         f"hold {query.shape[1]} / {key.shape[1]}")
    mode = {None: 0, "top_left": 2, "bottom_right": 3}[bias._causal_origin]
    if mode:
        kwargs.update(atten_mask=_compressed(query.device), sparse_mode=mode)
    out = torch_npu.npu_fusion_attention(query[0], key[0], value[0], query.shape[2], "TND",
                                         actual_seq_qlen=qs[1:], actual_seq_kvlen=ks[1:], **kwargs)[0]
    return out.unsqueeze(0)
