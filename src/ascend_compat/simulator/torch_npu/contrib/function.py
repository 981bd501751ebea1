"""``torch_npu.contrib.function`` of the stand-in: ``roll``, ``matmul_transpose``,
``npu_fast_condition_index_put`` (torch_npu's faster spellings of plain torch operations)."""
from __future__ import annotations

import torch

__all__ = ["roll", "matmul_transpose", "npu_fast_condition_index_put"]


def roll(input: torch.Tensor, shifts, dims=None) -> torch.Tensor:  # noqa: A002 (torch_npu's name)
    return torch.roll(input, shifts, dims)


def matmul_transpose(tensor1: torch.Tensor, tensor2: torch.Tensor) -> torch.Tensor:
    """``tensor1 @ tensor2.transpose(-2, -1)``."""
    return torch.matmul(tensor1, tensor2.transpose(-2, -1))


def npu_fast_condition_index_put(x: torch.Tensor, condition: torch.Tensor, value) -> torch.Tensor:
    """``x[condition] = value`` in place; returns ``x``."""
    x[condition] = value
    return x
