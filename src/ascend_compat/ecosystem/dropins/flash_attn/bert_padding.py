"""flash-attn 2.7.4's ``flash_attn.bert_padding`` helpers (pure torch, any device).

* ``unpad_input(hidden_states, attention_mask, unused_mask=None)`` returns the 5-tuple of
  flash-attn >= 2.6: ``(hidden_states (total_nnz, ...), indices, cu_seqlens (int32, batch + 1),
  max_seqlen_in_batch: int, seqused (int32, batch))``; ``unused_mask`` marks tokens that are kept
  in the packed tensor but not counted in ``seqused``.
* ``pad_input(hidden_states, indices, batch, seqlen)`` scatters back to ``(batch, seqlen, ...)``.
* ``index_first_axis(x, indices)`` / ``index_put_first_axis(values, indices, first_axis_dim)``:
  differentiable gather/scatter along dim 0.
* ``unpad_input_for_concatenated_sequences(hidden_states, attention_mask_in_length)``: rows hold
  the lengths of several samples packed into one sequence; returns the 4-tuple flash-attn returns.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = [
    "index_first_axis",
    "index_put_first_axis",
    "pad_input",
    "unpad_input",
    "unpad_input_for_concatenated_sequences",
]


class _IndexFirstAxis(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, indices):
        ctx.save_for_backward(indices)
        ctx.first_axis_dim = x.shape[0]
        return x[indices]

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        out = torch.zeros((ctx.first_axis_dim, *grad.shape[1:]), dtype=grad.dtype, device=grad.device)
        out[indices] = grad
        return out, None


class _IndexPutFirstAxis(torch.autograd.Function):
    @staticmethod
    def forward(ctx, values, indices, first_axis_dim):
        ctx.save_for_backward(indices)
        out = torch.zeros((first_axis_dim, *values.shape[1:]), dtype=values.dtype, device=values.device)
        out[indices] = values
        return out

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        return grad[indices], None, None


def index_first_axis(x: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """``x[indices]`` along dim 0 (x has >= 2 dims), differentiable."""
    if x.dim() < 2:
        raise RuntimeError(f"index_first_axis: input must have at least 2 dimensions, got {list(x.shape)}")
    return _IndexFirstAxis.apply(x, indices)


def index_put_first_axis(values: torch.Tensor, indices: torch.Tensor, first_axis_dim: int) -> torch.Tensor:
    """A zero tensor of ``first_axis_dim`` rows with ``values`` written at ``indices``, differentiable."""
    if indices.dim() != 1 or values.dim() < 2:
        raise RuntimeError("index_put_first_axis: indices must be 1-D and values at least 2-D")
    return _IndexPutFirstAxis.apply(values, indices, first_axis_dim)


def unpad_input(hidden_states: torch.Tensor, attention_mask: torch.Tensor, unused_mask: torch.Tensor | None = None):
    """Pack the tokens selected by ``attention_mask`` (+ ``unused_mask``); see the module docstring."""
    all_masks = attention_mask + unused_mask if unused_mask is not None else attention_mask
    seqlens = all_masks.sum(dim=-1, dtype=torch.int32)
    used = attention_mask.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(all_masks.flatten(), as_tuple=False).flatten()
    max_seqlen = int(seqlens.max().item())
    cu_seqlens = F.pad(torch.cumsum(seqlens, dim=0, dtype=torch.int32), (1, 0))
    flat = hidden_states.reshape(-1, *hidden_states.shape[2:])
    return index_first_axis(flat, indices), indices, cu_seqlens, max_seqlen, used


def unpad_input_for_concatenated_sequences(hidden_states: torch.Tensor, attention_mask_in_length: torch.Tensor):
    """Unpad rows that pack several samples (row entries = sample lengths, then zeros)."""
    length = attention_mask_in_length.sum(dim=-1)
    seqlen = attention_mask_in_length.size(-1)
    mask_2d = (torch.arange(seqlen, device=length.device, dtype=length.dtype).expand(len(length), seqlen)
               < length.unsqueeze(1))
    nz = torch.nonzero(attention_mask_in_length.flatten(), as_tuple=False).flatten()
    seqlens = attention_mask_in_length.flatten()[nz]
    indices = torch.nonzero(mask_2d.flatten(), as_tuple=False).flatten()
    max_seqlen = int(seqlens.max().item())
    cu_seqlens = F.pad(torch.cumsum(seqlens, dim=0, dtype=torch.int32), (1, 0))
    flat = hidden_states.reshape(-1, *hidden_states.shape[2:])
    return index_first_axis(flat, indices), indices, cu_seqlens, max_seqlen


def pad_input(hidden_states: torch.Tensor, indices: torch.Tensor, batch: int, seqlen: int) -> torch.Tensor:
    """Scatter packed rows back to a zero-padded ``(batch, seqlen, ...)`` tensor."""
    out = index_put_first_axis(hidden_states, indices, batch * seqlen)
    return out.reshape(batch, seqlen, *hidden_states.shape[1:])
