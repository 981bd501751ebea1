"""``apex.normalization`` layers on torch and ``torch_npu.npu_rms_norm``.

* ``FusedLayerNorm(normalized_shape, eps=1e-5, elementwise_affine=True)`` (and
  ``MixedFusedLayerNorm``) = ``torch.nn.LayerNorm`` (torch_npu runs it natively).
* ``FusedRMSNorm(normalized_shape, eps=1e-5, elementwise_affine=True)`` (and
  ``MixedFusedRMSNorm``): ``y = x / sqrt(mean(x², over normalized_shape) + eps) · weight`` computed
  in float32; on an NPU tensor through ``torch_npu.npu_rms_norm`` (weight cast to the input dtype,
  which the fused op requires), elsewhere in plain torch. The output has the input's dtype
  (``FusedRMSNorm``) or the weight's (``Mixed*``, as apex's mixed variants).
"""
from __future__ import annotations

import numbers

import torch

__all__ = ["FusedLayerNorm", "FusedRMSNorm", "MixedFusedLayerNorm", "MixedFusedRMSNorm"]


class FusedLayerNorm(torch.nn.LayerNorm):
    """apex's FusedLayerNorm = torch.nn.LayerNorm."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, *args, **kwargs):
        super().__init__(normalized_shape, eps=eps, elementwise_affine=elementwise_affine)


class MixedFusedLayerNorm(FusedLayerNorm):
    """apex's MixedFusedLayerNorm: output in the weight's dtype."""

    def forward(self, x):
        weight = self.weight.to(x.dtype) if self.weight is not None else None
        bias = self.bias.to(x.dtype) if self.bias is not None else None
        out = torch.nn.functional.layer_norm(x, self.normalized_shape, weight, bias, self.eps)
        return out.to(self.weight.dtype) if self.weight is not None else out


class FusedRMSNorm(torch.nn.Module):
    """apex's FusedRMSNorm; see the module docstring."""

    _mixed = False

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = torch.nn.Parameter(torch.ones(*self.normalized_shape))
        else:
            self.register_parameter("weight", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out_dtype = self.weight.dtype if (self._mixed and self.weight is not None) else x.dtype
        if x.device.type == "npu" and self.weight is not None:
            import torch_npu

            y = torch_npu.npu_rms_norm(x, self.weight.to(x.dtype), self.eps)[0]
            return y.to(out_dtype)
        dims = tuple(range(x.dim() - len(self.normalized_shape), x.dim()))
        x32 = x.float()
        y = x32 * torch.rsqrt(x32.pow(2).mean(dim=dims, keepdim=True) + self.eps)
        if self.weight is not None:
            y = y * self.weight.float()
        return y.to(out_dtype)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class MixedFusedRMSNorm(FusedRMSNorm):
    """apex's MixedFusedRMSNorm: output in the weight's dtype."""

    _mixed = True
