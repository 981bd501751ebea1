"""The host (CPU) tensor factories the simulator's own paths call: allocation, wrapped numbers,
fresh ``out=`` buffers, collective staging.

They are bound once from ``torch._C._VariableFunctions``, not looked up on ``torch`` at each call:
libraries replace the public ``torch.empty``/``torch.tensor``... while they run, and a replacement
that sends device-less calls to the accelerator (DeepSpeed's ``zero.Init`` wraps ``torch.empty``,
``zeros``, ``ones``, ``full``, ``arange``, ``eye``, ``randn`` and ``tensor`` with one that adds
``device="cuda"``, i.e. npu) would make every host allocation an npu allocation, which allocates
again, forever. Real torch_npu allocates in C++ and never meets those wrappers; neither may the
simulator. Every call here passes no device, so each result is a CPU tensor.
"""
from __future__ import annotations

import torch

_VF = torch._C._VariableFunctions

empty = _VF.empty
empty_strided = _VF.empty_strided
tensor = _VF.tensor

__all__ = ["empty", "empty_strided", "tensor"]
