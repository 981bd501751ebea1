"""CPU references of torch_npu's small tensor ops (torch_npu 2.14 schemas; the op docs in ``_op_plugin_docs.py``).

* ``npu_one_hot(self, num_classes=-1, depth=1, on_value=1, off_value=0)``: float32, a new axis of size
  ``depth`` at ``num_classes`` (-1 = last) holding ``on_value`` where ``self == i``, else ``off_value``.
* ``scatter_update(data, indices, updates, axis)`` (and in-place ``scatter_update_``): for batch b,
  ``updates[b]`` is written into ``data[b]`` along ``axis`` starting at ``indices[b]`` (2D indices:
  ``(batch, start)`` pairs); the KV-cache update of incremental decoding.
* ``npu_scatter_nd_update(input, indices, updates)`` (and ``_``): ``out[tuple(indices[j])] = updates[j]``
  over the last axis of ``indices`` (TensorFlow's scatter_nd_update).
* ``npu_silu``/``npu_silu_``, ``npu_mish``, ``npu_layer_norm_eval`` (``F.layer_norm``),
  ``npu_transpose(self, perm, require_contiguous=True)``, ``npu_slice(self, offsets, size)``,
  ``npu_broadcast(self, size)``, ``npu_pad(input, paddings)`` (zero padding, ``(before, after)`` pairs
  from the first axis on), ``npu_sort_v2`` (values only).
* ``npu_max.dim``/``npu_min.dim(self, dim, keepdim=False) -> (values, indices int32)``.
* ``npu_softmax_cross_entropy_with_logits(self, labels)``: ``-Σ labels·log_softmax(self)`` per row.
* ``npu_top_k_top_p(logits, p=None, k=None)``: torch_npu's documented nine-step filter (stable ascending
  sort, keep values >= the k-th largest, softmax, drop the prefix whose cumulative probability <= 1-p but
  always keep the largest, scatter back); filtered entries are ``-inf``.
* ``npu_dropout_with_add_softmax(self, x1, alpha, prob, dim) -> (mask, softmax_out, out)``:
  ``softmax(x1 + alpha·self, dim)``, dropout with drop probability ``prob`` scaled by ``1/(1-prob)``;
  ``mask`` is the uint8 keep mask with the input's shape (torch_npu returns its bit-packed form).
* ``get_npu_format(self)``: the ACL format recorded by ``npu_format_cast`` (2 = ND otherwise).
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

from ascend_compat.simulator.torch_npu.fused._errors import check
from ascend_compat.simulator.torch_npu.fused.transforms import get_format


def npu_one_hot(self: torch.Tensor, num_classes: int = -1, depth: int = 1, on_value=1, off_value=0):
    check(depth >= 1, f"npu_one_hot: depth must be positive, got {depth}.")
    axis = num_classes if num_classes >= 0 else self.dim() + 1 + num_classes
    classes = torch.arange(depth, device=self.device).reshape([depth] + [1] * (self.dim() - axis))
    hit = self.long().unsqueeze(axis) == classes
    on = torch.full((), float(on_value), device=self.device)
    off = torch.full((), float(off_value), device=self.device)
    return torch.where(hit, on, off)


def _scatter_update_into(out: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor, axis: int) -> torch.Tensor:
    op = "scatter_update"
    check(out.dim() == updates.dim() and 2 <= out.dim() <= 8, f"{op}: data and updates must have the same "
                                                              "rank, 2-8 dimensions.")
    check(indices.dim() in (1, 2), f"{op}: indices must be 1D or 2D, got {indices.dim()}D.")
    axis = axis % out.dim()
    check(axis != 0, f"{op}: axis must not be the batch axis 0.")
    length = updates.shape[axis]
    pairs = indices.long().tolist()
    for j, item in enumerate(pairs):
        b, start = (j, item) if indices.dim() == 1 else (item[0], item[1])
        dst = out[b].narrow(axis - 1, start, length)
        dst.copy_(updates[j])
    return out


def scatter_update(self: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor, axis: int) -> torch.Tensor:
    return _scatter_update_into(self.clone(), indices, updates, axis)


def scatter_update_(self: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor, axis: int) -> torch.Tensor:
    return _scatter_update_into(self, indices, updates, axis)


def _scatter_nd(out: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor) -> torch.Tensor:
    op = "npu_scatter_nd_update"
    check(indices.dim() >= 2, f"{op}: indices must have at least 2 dimensions.")
    a = indices.shape[-1]
    check(a <= out.dim(), f"{op}: indices.size(-1)={a} exceeds the input's {out.dim()} dimensions.")
    idx = indices.reshape(-1, a).long()
    want = tuple(indices.shape[:-1]) + tuple(out.shape[a:])
    check(tuple(updates.shape) == want, f"{op}: updates must have shape {list(want)}, got {list(updates.shape)}.")
    out[tuple(idx.t())] = updates.reshape((-1,) + tuple(out.shape[a:])).to(out.dtype)
    return out


def npu_scatter_nd_update(self: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor) -> torch.Tensor:
    return _scatter_nd(self.clone(), indices, updates)


def npu_scatter_nd_update_(self: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor) -> torch.Tensor:
    return _scatter_nd(self, indices, updates)


def npu_silu(self: torch.Tensor) -> torch.Tensor:
    return F.silu(self)


def npu_silu_(self: torch.Tensor) -> torch.Tensor:
    return self.copy_(F.silu(self))


def npu_mish(self: torch.Tensor) -> torch.Tensor:
    return F.mish(self)


def npu_layer_norm_eval(input: torch.Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5):  # noqa: A002
    return F.layer_norm(input, list(normalized_shape), weight, bias, eps)


def npu_transpose(self: torch.Tensor, perm, require_contiguous: bool = True) -> torch.Tensor:
    out = self.permute(*[int(p) for p in perm])
    return out.contiguous() if require_contiguous else out


def npu_slice(self: torch.Tensor, offsets, size) -> torch.Tensor:
    check(len(offsets) == self.dim() == len(size), "npu_slice: offsets and size need one entry per dimension.")
    out = self
    for d, (o, s) in enumerate(zip(offsets, size)):
        out = out.narrow(d, int(o), int(s))
    return out.contiguous()


def npu_broadcast(self: torch.Tensor, size) -> torch.Tensor:
    return self.expand(*[int(s) for s in size]).contiguous()


def npu_pad(input: torch.Tensor, paddings) -> torch.Tensor:  # noqa: A002
    pads = [int(p) for p in paddings]
    check(len(pads) % 2 == 0 and len(pads) // 2 <= input.dim(), "npu_pad: paddings must be (before, after) pairs, "
                                                                 "at most one per dimension.")
    pairs = [pads[i:i + 2] for i in range(0, len(pads), 2)]
    flat = [v for pair in reversed(pairs) for v in pair]
    return F.pad(input, flat)


def npu_sort_v2(self: torch.Tensor, dim: int = -1, descending: bool = False) -> torch.Tensor:
    return torch.sort(self, dim=dim, descending=descending).values


def npu_max(self: torch.Tensor, dim: int, keepdim: bool = False):
    values, indices = torch.max(self, dim, keepdim)
    return values, indices.to(torch.int32)


def npu_min(self: torch.Tensor, dim: int, keepdim: bool = False):
    values, indices = torch.min(self, dim, keepdim)
    return values, indices.to(torch.int32)


def npu_softmax_cross_entropy_with_logits(self: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return -(labels * torch.log_softmax(self, -1)).sum(-1)


def npu_top_k_top_p(logits: torch.Tensor, p: Optional[torch.Tensor] = None, k: Optional[torch.Tensor] = None):
    op = "npu_top_k_top_p"
    check(p is not None or k is not None, f"{op}: p and k cannot both be None.")
    check(logits.dim() == 2, f"{op}: logits must be 2D, got {logits.dim()}D.")
    values, order = torch.sort(logits, dim=-1, stable=True)
    if k is not None:
        kth = values.gather(-1, (values.shape[-1] - k.long()).clamp(0, values.shape[-1] - 1).unsqueeze(-1))
        values = values.masked_fill(values < kth, float("-inf"))
    if p is not None:
        cum = torch.softmax(values.float(), -1).cumsum(-1)
        drop = cum <= (1 - p.float()).unsqueeze(-1)
        drop[:, -1] = False
        values = values.masked_fill(drop, float("-inf"))
    return torch.empty_like(logits).scatter_(-1, order, values)


def npu_dropout_with_add_softmax(self: torch.Tensor, x1: torch.Tensor, alpha, prob: float, dim: int):
    check(0.0 <= prob < 1.0, f"npu_dropout_with_add_softmax: prob must be in [0, 1), got {prob}.")
    soft = torch.softmax(x1 + self * alpha, dim=dim)
    keep = torch.rand_like(soft, dtype=torch.float32) >= prob
    out = soft * keep.to(soft.dtype) / (1.0 - prob)
    # torch_npu's mask is DropOutGenMaskV3's: one byte per element of x1, flat, its length rounded
    # up to a multiple of 128 (op-plugin DropoutWithAddSoftmaxKernelNpu.cpp)
    mask = keep.to(torch.uint8).flatten()
    return torch.nn.functional.pad(mask, (0, -mask.numel() % 128)), soft, out


def get_npu_format(self: torch.Tensor) -> int:
    return get_format(self)
