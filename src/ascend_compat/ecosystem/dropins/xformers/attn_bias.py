"""``xformers.ops.fmha.attn_bias`` classes that map onto torch_npu's fused attention masks.

Semantics as in xformers 0.0.29 (``True``/kept positions; additive ``-inf`` elsewhere):

* ``LowerTriangularMask``: causal aligned to the top-left (query ``i`` sees keys ``j <= i``);
* ``LowerTriangularFromBottomRightMask``: causal aligned to the bottom-right (``j <= i + Mk - Mq``);
* ``LowerTriangularMaskWithTensorBias`` (``LowerTriangularMask().add_bias(t)``): top-left causal
  plus an additive tensor bias;
* ``LocalAttentionFromBottomRightMask(window_left, window_right)``: keys
  ``[i + Mk - Mq - window_left, i + Mk - Mq + window_right]``;
* ``BlockDiagonalMask.from_seqlens(q_seqlen, kv_seqlen=None)``: packed sequences (batch 1, the
  sequences concatenated along M), attention only within a block; ``make_causal()`` (top-left per
  block) and ``make_causal_from_bottomright()``; ``split(t)`` / ``from_tensor_list(ts)``.

Every class has ``materialize(shape, dtype=torch.float32, device="cpu")`` giving the additive bias
(0 / -inf), so results can be checked against plain attention.
"""
from __future__ import annotations

from typing import Sequence

import torch

__all__ = [
    "AttentionBias",
    "BlockDiagonalCausalFromBottomRightMask",
    "BlockDiagonalCausalMask",
    "BlockDiagonalMask",
    "LocalAttentionFromBottomRightMask",
    "LowerTriangularFromBottomRightMask",
    "LowerTriangularMask",
    "LowerTriangularMaskWithTensorBias",
]


def _keep(mq: int, mk: int, left: int | None, right: int | None, origin: int, device) -> torch.Tensor:
    i = torch.arange(mq, device=device).view(mq, 1)
    j = torch.arange(mk, device=device).view(1, mk)
    d = j - i - origin
    keep = torch.ones(mq, mk, dtype=torch.bool, device=device)
    if right is not None:
        keep &= d <= right
    if left is not None:
        keep &= d >= -left
    return keep


def _additive(keep: torch.Tensor, shape, dtype) -> torch.Tensor:
    bias = torch.zeros(keep.shape, dtype=dtype, device=keep.device).masked_fill(~keep, float("-inf"))
    return bias.expand(*shape[:-2], *keep.shape) if len(shape) > 2 else bias


class AttentionBias:
    """Base class of the structured biases."""

    def materialize(self, shape, dtype=torch.float32, device="cpu") -> torch.Tensor:
        raise NotImplementedError


class LowerTriangularMask(AttentionBias):
    """Top-left aligned causal mask."""

    def materialize(self, shape, dtype=torch.float32, device="cpu"):
        return _additive(_keep(shape[-2], shape[-1], None, 0, 0, device), shape, dtype)

    def add_bias(self, bias: torch.Tensor) -> "LowerTriangularMaskWithTensorBias":
        return LowerTriangularMaskWithTensorBias(bias)


class LowerTriangularMaskWithTensorBias(LowerTriangularMask):
    """Top-left causal mask plus an additive tensor ``_bias``."""

    def __init__(self, bias: torch.Tensor) -> None:
        self._bias = bias

    def materialize(self, shape, dtype=torch.float32, device="cpu"):
        return super().materialize(shape, dtype, device) + self._bias.to(dtype=dtype, device=device)


class LowerTriangularFromBottomRightMask(AttentionBias):
    """Bottom-right aligned causal mask."""

    def materialize(self, shape, dtype=torch.float32, device="cpu"):
        mq, mk = shape[-2], shape[-1]
        return _additive(_keep(mq, mk, None, 0, mk - mq, device), shape, dtype)


class LocalAttentionFromBottomRightMask(AttentionBias):
    """Sliding window counted from the bottom-right diagonal (inclusive bounds)."""

    def __init__(self, window_left: int, window_right: int) -> None:
        if window_left < 0 or window_right < 0:
            raise ValueError(f"Invalid window value passed to `LocalAttentionFromBottomRightMask`: expected "
                             f"`window_left` and `window_right` to be >= 0, got {window_left}, {window_right}")
        self.window_left = window_left
        self.window_right = window_right

    def materialize(self, shape, dtype=torch.float32, device="cpu"):
        mq, mk = shape[-2], shape[-1]
        return _additive(_keep(mq, mk, self.window_left, self.window_right, mk - mq, device), shape, dtype)


class _SeqLenInfo:
    def __init__(self, seqlens: Sequence[int]) -> None:
        self.seqlens = [int(s) for s in seqlens]
        self.seqstart_py = [0]
        for s in self.seqlens:
            self.seqstart_py.append(self.seqstart_py[-1] + s)
        self.max_seqlen = max(self.seqlens) if self.seqlens else 0
        self.seqstart = torch.tensor(self.seqstart_py, dtype=torch.int32)


class BlockDiagonalMask(AttentionBias):
    """Attention restricted to blocks of packed sequences (non-causal within a block)."""

    _causal_origin: str | None = None  # None, "top_left" or "bottom_right"

    def __init__(self, q_seqinfo: _SeqLenInfo, k_seqinfo: _SeqLenInfo) -> None:
        self.q_seqinfo = q_seqinfo
        self.k_seqinfo = k_seqinfo

    @classmethod
    def from_seqlens(cls, q_seqlen: Sequence[int], kv_seqlen: Sequence[int] | None = None):
        if kv_seqlen is not None and len(kv_seqlen) != len(q_seqlen):
            raise ValueError("BlockDiagonalMask.from_seqlens: q_seqlen and kv_seqlen must have the same length")
        q = _SeqLenInfo(q_seqlen)
        return cls(q, q if kv_seqlen is None else _SeqLenInfo(kv_seqlen))

    @classmethod
    def from_tensor_list(cls, tensors: Sequence[torch.Tensor]):
        """Concatenate ``[1, M_i, ...]`` tensors along M; returns (mask, concatenated tensor)."""
        for t in tensors:
            if t.shape[0] != 1:
                raise ValueError("BlockDiagonalMask.from_tensor_list: every tensor needs batch size 1")
        mask = cls.from_seqlens([t.shape[1] for t in tensors])
        return mask, torch.cat(list(tensors), dim=1)

    def split(self, tensor: torch.Tensor) -> list:
        """Split a ``[1, total_q, ...]`` tensor back into the per-sequence ``[1, M_i, ...]`` tensors."""
        return list(tensor.split(self.q_seqinfo.seqlens, dim=1))

    def make_causal(self) -> "BlockDiagonalCausalMask":
        return BlockDiagonalCausalMask(self.q_seqinfo, self.k_seqinfo)

    def make_causal_from_bottomright(self) -> "BlockDiagonalCausalFromBottomRightMask":
        return BlockDiagonalCausalFromBottomRightMask(self.q_seqinfo, self.k_seqinfo)

    def materialize(self, shape, dtype=torch.float32, device="cpu"):
        keep = torch.zeros(shape[-2], shape[-1], dtype=torch.bool, device=device)
        qs, ks = self.q_seqinfo.seqstart_py, self.k_seqinfo.seqstart_py
        for (q0, q1), (k0, k1) in zip(zip(qs, qs[1:]), zip(ks, ks[1:])):
            mq, mk = q1 - q0, k1 - k0
            if self._causal_origin is None:
                block = torch.ones(mq, mk, dtype=torch.bool, device=device)
            else:
                block = _keep(mq, mk, None, 0, 0 if self._causal_origin == "top_left" else mk - mq, device)
            keep[q0:q1, k0:k1] = block
        return _additive(keep, shape, dtype)


class BlockDiagonalCausalMask(BlockDiagonalMask):
    """Block-diagonal, causal (top-left) within each block."""

    _causal_origin = "top_left"


class BlockDiagonalCausalFromBottomRightMask(BlockDiagonalMask):
    """Block-diagonal, causal aligned to each block's bottom-right."""

    _causal_origin = "bottom_right"
