"""``torch_npu.contrib.module`` of the stand-in: the cheap modules (``Mish``, ``SiLU``, ``Swish``,
``LabelSmoothingCrossEntropy``, ``NpuDropPath``, ``FastBatchNorm1d/2d/3d``) with torch_npu's arguments."""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["Mish", "SiLU", "Swish", "LabelSmoothingCrossEntropy", "NpuDropPath", "FastBatchNorm1d",
           "FastBatchNorm2d", "FastBatchNorm3d"]


class Mish(nn.Mish):
    pass


class SiLU(nn.SiLU):
    pass


Swish = SiLU


class LabelSmoothingCrossEntropy(nn.Module):
    """torch_npu's label-smoothing cross entropy: one-hot with ``1 - smooth_factor`` on the target and
    ``smooth_factor / (num_classes - 1)`` elsewhere, softmax cross entropy, batch mean (float32)."""

    def __init__(self, num_classes: int = 1000, smooth_factor: float = 0.0):
        super().__init__()
        self.on_value = 1.0 - smooth_factor
        self.off_value = 1.0 * smooth_factor / (num_classes - 1)

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        one_hot = torch.ops.npu.npu_one_hot(target.int(), -1, pred.size(1), self.on_value, self.off_value)
        loss = torch.ops.npu.npu_softmax_cross_entropy_with_logits(pred, one_hot.to(pred.dtype))
        return torch.mean(loss, [0], keepdim=False, dtype=torch.float32)


class NpuDropPath(nn.Module):
    """Stochastic depth: zero whole samples with probability ``drop_prob`` in training, scale the rest."""

    def __init__(self, drop_prob: float = 0.0):
        super().__init__()
        self.drop_prob = float(drop_prob)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.drop_prob == 0.0 or not self.training:
            return x
        keep = 1.0 - self.drop_prob
        mask = torch.rand((x.shape[0],) + (1,) * (x.dim() - 1), dtype=x.dtype, device=x.device) < keep
        return x * mask.to(x.dtype) / keep


class FastBatchNorm1d(nn.BatchNorm1d):
    pass


class FastBatchNorm2d(nn.BatchNorm2d):
    pass


class FastBatchNorm3d(nn.BatchNorm3d):
    pass
