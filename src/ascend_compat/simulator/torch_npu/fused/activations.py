"""CPU references of torch_npu's fused activations (torch_npu 2.14 schemas).

* ``npu_swiglu(self, dim=-1)``: split ``self`` in halves A, B along ``dim``; ``silu(A) * B``
  (the FIRST half is activated).
* ``npu_geglu(self, dim=-1, approximate=1, activate_left=False) -> (out, gelu)``: approximate 0 =
  erf GELU, 1 = tanh GELU; by default the RIGHT half is activated (``out = A * gelu(B)``), with
  ``activate_left=True`` ``out = gelu(A) * B``; the second output is the activated half.
* ``npu_gelu(self, *, approximate='none')``: ``torch.nn.functional.gelu``.
* ``npu_gelu_mul(input, *, approximate='none')``: ``gelu(x1) * x2`` over the last-dim halves.
* ``npu_fast_gelu(self)`` / ``fast_gelu(self)``: ``x / (1 + exp(-1.702 x))`` (the Atlas A2/A3 formula).

Computation in float32, results in the input dtype; differentiable through autograd. Sources: the
wheel's ``_op_plugin_docs.py`` and meta registrations, CANN GeGluV3 docs (activateLeft).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ascend_compat.simulator.torch_npu.fused._errors import check, check_float_dtype


def _halves(op: str, x: torch.Tensor, dim: int):
    check_float_dtype(op, "self", x)
    n = x.dim()
    check(1 <= n <= 8, f"{op}: dim num out of range [1, 8], got {n}.")
    check(-n <= dim < n, f"{op}: attribute [dim] out of range [-{n}, {n - 1}], got {dim}.", "VALUE")
    size = x.shape[dim]
    check(size % 2 == 0, f"{op}: x shape: {list(x.shape)}. Dim [{dim}] of x should be divisible by 2, but get "
                         f"[{size}].")
    return x.float().chunk(2, dim=dim)


def npu_swiglu(self: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """``torch_npu.npu_swiglu``: ``silu(A) * B`` with A the first half along ``dim``."""
    a, b = _halves("npu_swiglu", self, dim)
    return (F.silu(a) * b).to(self.dtype)


def _gelu_mode(op: str, approximate) -> str:
    if isinstance(approximate, str):
        check(approximate in ("none", "tanh"), f"{op}: approximate must be 'none' or 'tanh', got {approximate!r}.",
              "VALUE")
        return approximate
    check(approximate in (0, 1), f"{op}: approximate must be 0 (none) or 1 (tanh), got {approximate!r}.", "VALUE")
    return "tanh" if approximate == 1 else "none"


def npu_geglu(self: torch.Tensor, dim: int = -1, approximate: int = 1, activate_left: bool = False):
    """``torch_npu.npu_geglu``: returns ``(out, gelu_of_activated_half)``."""
    mode = _gelu_mode("npu_geglu", approximate)
    a, b = _halves("npu_geglu", self, dim)
    if activate_left:
        g = F.gelu(a, approximate=mode)
        out = g * b
    else:
        g = F.gelu(b, approximate=mode)
        out = a * g
    return out.to(self.dtype), g.to(self.dtype)


def npu_gelu(self: torch.Tensor, *, approximate: str = "none") -> torch.Tensor:
    """``torch_npu.npu_gelu``: GELU with ``approximate`` 'none' (erf) or 'tanh'."""
    check_float_dtype("npu_gelu", "self", self)
    return F.gelu(self.float(), approximate=_gelu_mode("npu_gelu", approximate)).to(self.dtype)


def npu_gelu_mul(input: torch.Tensor, *, approximate: str = "none") -> torch.Tensor:  # noqa: A002 (torch_npu name)
    """``torch_npu.npu_gelu_mul``: ``gelu(x1) * x2`` with x1, x2 the halves of the last dim."""
    check(2 <= input.dim() <= 8, f"npu_gelu_mul: input must have 2-8 dimensions, got {input.dim()}.")
    a, b = _halves("npu_gelu_mul", input, -1)
    return (F.gelu(a, approximate=_gelu_mode("npu_gelu_mul", approximate)) * b).to(input.dtype)


def npu_fast_gelu(self: torch.Tensor) -> torch.Tensor:
    """``torch_npu.npu_fast_gelu``: ``x / (1 + exp(-1.702 x))`` (Atlas A2/A3 formula)."""
    check_float_dtype("npu_fast_gelu", "self", self)
    x = self.float()
    return (x * torch.sigmoid(1.702 * x)).to(self.dtype)


def fast_gelu(self: torch.Tensor) -> torch.Tensor:
    """``torch_npu.fast_gelu``: same computation as :func:`npu_fast_gelu`."""
    return npu_fast_gelu(self)


def npu_clipped_swiglu(x: torch.Tensor, *, group_index=None, dim: int = -1, alpha: float = 1.702,
                       limit: float = 7.0, bias: float = 1.0, interleaved: bool = True) -> torch.Tensor:
    """``torch_npu.npu_clipped_swiglu``: split ``dim`` into A, B (odd/even when ``interleaved``, else
    halves); ``A = min(A, limit)``, ``B = clamp(B, ±limit)``; ``A·sigmoid(alpha·A)·(B + bias)``. With
    ``group_index`` only the first ``sum(group_index)`` rows (of the axes before ``dim``) are computed,
    the rest of the output is zero."""
    op = "npu_clipped_swiglu"
    check_float_dtype(op, "x", x)
    check(x.dim() > 1 and x.shape[dim] % 2 == 0, f"{op}: x must have >1 dims and an even size on dim {dim}.")
    d = dim % x.dim()
    a, b = (x.unflatten(d, (-1, 2)).unbind(d + 1) if interleaved else x.chunk(2, d))
    a32, b32 = a.float().clamp(max=limit), b.float().clamp(-limit, limit)
    y = a32 * torch.sigmoid(alpha * a32) * (b32 + bias)
    if group_index is not None:
        keep = int(group_index.sum())
        rows = torch.arange(y.shape[:d].numel(), device=y.device).reshape(y.shape[:d] + (1,) * (y.dim() - d))
        y = y * (rows < keep)
    return y.to(x.dtype)
