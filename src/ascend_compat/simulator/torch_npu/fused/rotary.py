"""CPU references of torch_npu's rotary position embedding ops (torch_npu 2.14 schemas).

* ``npu_rotary_mul(self, r1, r2, rotary_mode='half', rotate=None)``: ``r1`` is cos, ``r2`` sin;
  ``out = r1·x + r2·rot(x)`` where ``rot`` is ``cat(-x2, x1)`` over the last-dim halves ('half',
  HF's ``rotate_half``), the pairwise ``(-x_odd, x_even)`` interleave ('interleave'), or
  ``x @ rotate`` when ``rotate`` is given. 4-D inputs, even D < 896; r1/r2 broadcast to x.
  Differentiable in x, r1 and r2.
* ``npu_apply_rotary_pos_emb(query, key, cos, sin, layout='BSND', rotary_mode='half')``: applies
  the 'half' rotation to query and key IN PLACE and returns them. On Atlas A2/A3 (what the
  simulator emulates) only layouts BSND (4-D) and TND (3-D), rotary_mode 'half' and D of 64 or 128
  are supported; cos/sin have N = 1 and the same D.

Sources: the wheel's ``_op_plugin_docs.py`` (formulas and constraints) and meta registrations.
"""
from __future__ import annotations

import torch

from ascend_compat.simulator.torch_npu.fused._errors import check, check_float_dtype, not_supported


def _rotate(x: torch.Tensor, mode: str) -> torch.Tensor:
    if mode == "half":
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((-odd, even), dim=-1).flatten(-2)


def npu_rotary_mul(self: torch.Tensor, r1: torch.Tensor, r2: torch.Tensor, rotary_mode: str = "half",
                   rotate: torch.Tensor | None = None) -> torch.Tensor:
    """``torch_npu.npu_rotary_mul``: ``r1 * x + r2 * rot(x)``; see the module docstring."""
    op = "npu_rotary_mul"
    for name, t in (("input", self), ("r1", r1), ("r2", r2)):
        check_float_dtype(op, name, t)
        check(t.dim() == 4, f"{op}: {name} must be 4-dimensional, got shape {list(t.shape)}.")
    check(rotary_mode in ("half", "interleave"),
          f"{op}: rotary_mode must be 'half' or 'interleave', got {rotary_mode!r}.", "VALUE")
    d = self.shape[-1]
    check(d % 2 == 0 and d < 896, f"{op}: the last dim D must be even and < 896, got {d}.")
    try:
        torch.broadcast_shapes(r1.shape, self.shape)
        torch.broadcast_shapes(r2.shape, self.shape)
    except RuntimeError:
        check(False, f"{op}: r1 {list(r1.shape)} and r2 {list(r2.shape)} must broadcast to the input "
                     f"{list(self.shape)} (e.g. 11SD for BNSD, 1S1D for BSND).")
    x = self.float()
    if rotate is not None:
        check(rotate.dim() == 2 and tuple(rotate.shape) == (d, d),
              f"{op}: rotate must be a [D, D] = [{d}, {d}] matrix, got {list(rotate.shape)}.")
        x_new = x @ rotate.detach().float()
    else:
        x_new = _rotate(x, rotary_mode)
    return (r1.float() * x + r2.float() * x_new).to(self.dtype)


def npu_apply_rotary_pos_emb(query: torch.Tensor, key: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                             layout: str = "BSND", rotary_mode: str = "half"):
    """``torch_npu.npu_apply_rotary_pos_emb``: rotate query and key in place; returns ``(query, key)``."""
    op = "npu_apply_rotary_pos_emb"
    if isinstance(layout, int):  # the schema's meta function also receives the layout as an enum
        layout = {1: "BSND", 2: "SBND", 3: "BNSD", 4: "TND"}.get(layout, str(layout))
    if layout in ("SBND", "BNSD") or rotary_mode in ("interleave", "quarter"):
        raise not_supported(op, f"layout={layout!r}/rotary_mode={rotary_mode!r} (Atlas 350 only; the emulated "
                                "Atlas A2/A3 support layout BSND/TND with rotary_mode 'half')")
    check(layout in ("BSND", "TND"), f"{op}: layout must be 'BSND' or 'TND', got {layout!r}.", "VALUE")
    check(rotary_mode == "half", f"{op}: rotary_mode must be 'half', got {rotary_mode!r}.", "VALUE")
    ndim = 4 if layout == "BSND" else 3
    for name, t in (("query", query), ("key", key), ("cos", cos), ("sin", sin)):
        check_float_dtype(op, name, t)
        check(t.dim() == ndim, f"{op}: {name} must be {ndim}-dimensional for layout {layout}, got "
                               f"{list(t.shape)}.")
        check(t.dtype == query.dtype, f"{op}: query, key, cos and sin must share a dtype.", "TYPE")
    lead = ndim - 2
    check(query.shape[:lead] == key.shape[:lead] == cos.shape[:lead] == sin.shape[:lead],
          f"{op}: the {'B and S' if lead == 2 else 'T'} dims of query, key, cos and sin must be equal.")
    check(query.shape[-1] == key.shape[-1] in (64, 128),
          f"{op}: the head dim D of query and key must be equal and 64 or 128 on Atlas A2/A3, got "
          f"{query.shape[-1]} and {key.shape[-1]}.")
    check(cos.shape == sin.shape and cos.shape[-2] == 1 and cos.shape[-1] == query.shape[-1],
          f"{op}: cos and sin must be [..., 1, D] with D = {query.shape[-1]}, got {list(cos.shape)} and "
          f"{list(sin.shape)}.")
    c, s = cos.float(), sin.float()
    for t in (query, key):
        x = t.float()
        t.copy_((x * c + _rotate(x, "half") * s).to(t.dtype))
    return query, key


def npu_interleave_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """``torch_npu.npu_interleave_rope`` (DeepSeek MLA): de-interleave the last axis (even then odd
    elements), then ``x·cos + rotate_half(x)·sin``, computed in float32."""
    op = "npu_interleave_rope"
    check_float_dtype(op, "x", x)
    check(x.dim() == 4 and x.shape[-1] % 2 == 0, f"{op}: x must be 4D with an even last dimension.")
    d = x.shape[-1]
    xi = x.float().unflatten(-1, (d // 2, 2)).transpose(-1, -2).reshape(x.shape)
    return (xi * cos.float() + _rotate(xi, "half") * sin.float()).to(x.dtype)
