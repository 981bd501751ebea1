"""Ascend numerics that differ from CUDA by design: what they are, what CUDA does, and the switch.

``ascend-compat compare`` lists an op whose result differs because of one of these in its "as on
Ascend" section (``--strict`` counts them as departures); the simulated NPU imitates them
(``simulator.numerics`` for HF32, ``simulator._float64`` for the downcast). Sources: torch_npu's
``EnvVariables.cpp`` / ``LazyInitAclops.cpp`` (HF32 defaults) and ``ToKernelNpu.cpp`` (the downcast);
``docs/accuracy.md`` and ``docs/float64.md``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict

__all__ = ["ByDesign", "BY_DESIGN", "HF32_CONV", "HF32_MATMUL", "FLOAT64"]


@dataclass(frozen=True)
class ByDesign:
    """One by-design behaviour: ``key``, a ``title``, what ``cuda`` does instead, and ``control``: the
    switch (or the code change) that turns it off."""

    key: str
    title: str
    cuda: str
    control: str


HF32_CONV = ByDesign(
    "hf32_conv", "float32 convolution computed in HF32",
    "TF32 while torch.backends.cudnn.allow_tf32 is True (the default)",
    "torch.npu.conv.allow_hf32 = False (on by default; under the shim torch.backends.cudnn.allow_tf32 = False "
    "sets it too)")
HF32_MATMUL = ByDesign(
    "hf32_matmul", "float32 matmul computed in HF32",
    "TF32 only while torch.backends.cuda.matmul.allow_tf32 is True (off by default)",
    "torch.npu.matmul.allow_hf32 = False (off by default; under the shim torch.backends.cuda.matmul.allow_tf32 "
    "sets it)")
FLOAT64 = ByDesign(
    "float64", "float64 computed in float32 (torch_npu turns .double() / .to(torch.float64) of an NPU tensor "
    "into float32)",
    "computes in float64",
    "no switch: compute it on the CPU (x.cpu().double()), or write float32 and accept it")

BY_DESIGN: Dict[str, ByDesign] = {b.key: b for b in (HF32_CONV, HF32_MATMUL, FLOAT64)}
