"""CPU references of torch_npu's RMSNorm family (torch_npu 2.14 schemas).

* ``npu_rms_norm(self, gamma, epsilon=1e-6) -> (y, rstd)``: normalises over the trailing
  ``gamma.dim()`` axes, ``rstd = 1/sqrt(mean(x²) + eps)``, ``y = x·rstd·gamma``.
* ``npu_gemma_rms_norm(self, gamma, epsilon=1e-6) -> (y, rstd)``: ``y = x·rstd·(1 + gamma)``.
* ``npu_add_rms_norm(x1, x2, gamma, epsilon=1e-6) -> (y, rstd, x)`` with ``x = x1 + x2``.
* ``npu_add_layer_norm(x1, x2, gamma, beta, epsilon=1e-5, additional_output=False) -> (y, mean, rstd, x)``:
  ``x = x1 + x2``, ``y = (x - mean(x))·rstd·gamma + beta`` with ``rstd = 1/sqrt(var(x) + eps)`` (biased
  variance) over the trailing ``gamma.dim()`` axes (CANN's aclnnAddLayerNorm); ``mean``/``rstd`` float32
  of shape ``x.shape[:-gamma.dim()] + (1,)*gamma.dim()`` (torch_npu's meta registration); ``x`` is
  filled whether or not ``additional_output`` asks for it.

``rstd`` is float32 of shape ``x.shape[:-gamma.dim()] + (1,)*gamma.dim()`` (torch_npu's meta
registration); y and x keep the input dtype. Inputs must be float16/bfloat16/float32 with gamma of
the same dtype; computation is in float32. Verified against the wheel's
``op_plugin/meta/_meta_registrations.py`` and ``_op_plugin_docs.py``.
"""
from __future__ import annotations

import torch

from ascend_compat.simulator.torch_npu.fused._errors import check, check_float_dtype


def _check(op: str, x: torch.Tensor, gamma: torch.Tensor, min_dim: int) -> int:
    check_float_dtype(op, "self", x)
    check(gamma.dtype == x.dtype, f"{op}: gamma dtype {gamma.dtype} must equal the input dtype {x.dtype}.", "TYPE")
    check(min_dim <= x.dim() <= 8, f"{op}: the input must have {min_dim}-8 dimensions, got {x.dim()}.")
    g = gamma.dim()
    check(1 <= g <= x.dim() and tuple(gamma.shape) == tuple(x.shape[x.dim() - g:]),
          f"{op}: gamma shape {list(gamma.shape)} must equal the trailing dims of the input {list(x.shape)}.")
    check(x.device == gamma.device, "Expected all tensors to be on the same device. Expected NPU tensor, please "
                                    "check whether the input tensor device is correct.", "TYPE")
    return g


def _rms(x32: torch.Tensor, g: int, epsilon: float) -> torch.Tensor:
    dims = tuple(range(x32.dim() - g, x32.dim()))
    return torch.rsqrt(x32.pow(2).mean(dim=dims, keepdim=True) + epsilon)


def npu_rms_norm(self: torch.Tensor, gamma: torch.Tensor, epsilon: float = 1e-6):
    """``torch_npu.npu_rms_norm``: returns ``(y, rstd)``; see the module docstring."""
    g = _check("npu_rms_norm", self, gamma, 1)
    x32 = self.float()
    rstd = _rms(x32, g, epsilon)
    y = (x32 * rstd * gamma.float()).to(self.dtype)
    return y, rstd.detach()


def npu_gemma_rms_norm(self: torch.Tensor, gamma: torch.Tensor, epsilon: float = 1e-6):
    """``torch_npu.npu_gemma_rms_norm``: like npu_rms_norm but scales by ``1 + gamma``."""
    g = _check("npu_gemma_rms_norm", self, gamma, 1)
    x32 = self.float()
    rstd = _rms(x32, g, epsilon)
    y = (x32 * rstd * (1.0 + gamma.float())).to(self.dtype)
    return y, rstd.detach()


def npu_add_rms_norm(x1: torch.Tensor, x2: torch.Tensor, gamma: torch.Tensor, epsilon: float = 1e-6):
    """``torch_npu.npu_add_rms_norm``: returns ``(y, rstd, x)`` where ``x = x1 + x2``, ``y = rms_norm(x)``."""
    g = _check("npu_add_rms_norm", x1, gamma, 1)
    check(x2.dtype == x1.dtype and tuple(x2.shape) == tuple(x1.shape),
          f"npu_add_rms_norm: x2 must match x1 in shape and dtype, got {list(x2.shape)} {x2.dtype} vs "
          f"{list(x1.shape)} {x1.dtype}.")
    s32 = x1.float() + x2.float()
    rstd = _rms(s32, g, epsilon)
    y = (s32 * rstd * gamma.float()).to(x1.dtype)
    return y, rstd.detach(), s32.to(x1.dtype)


def npu_add_layer_norm(x1: torch.Tensor, x2: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor,
                       epsilon: float = 1e-5, additional_output: bool = False):
    """``torch.ops.npu.npu_add_layer_norm``: returns ``(y, mean, rstd, x)`` with ``x = x1 + x2``."""
    op = "npu_add_layer_norm"
    g = _check(op, x1, gamma, 1)
    check(x2.dtype == x1.dtype and tuple(x2.shape) == tuple(x1.shape),
          f"{op}: x2 must match x1 in shape and dtype, got {list(x2.shape)} {x2.dtype} vs {list(x1.shape)} {x1.dtype}.")
    check(beta.dtype == gamma.dtype and tuple(beta.shape) == tuple(gamma.shape),
          f"{op}: beta must match gamma in shape and dtype, got {list(beta.shape)} {beta.dtype}.")
    s32 = x1.float() + x2.float()
    dims = tuple(range(s32.dim() - g, s32.dim()))
    mean = s32.mean(dim=dims, keepdim=True)
    rstd = torch.rsqrt(s32.var(dim=dims, unbiased=False, keepdim=True) + epsilon)
    y = ((s32 - mean) * rstd * gamma.float() + beta.float()).to(x1.dtype)
    return y, mean.detach(), rstd.detach(), s32.to(x1.dtype)
