"""How far an NPU result is from its CPU reference, and the tolerance it is judged by.

:func:`measure` compares one output tensor with its reference (computed in float32, or float64 on
request): max absolute and relative error, cosine similarity, ULP distance in the NPU result's own
dtype, and whether a NaN/Inf appeared that the reference does not have. :data:`TOLERANCES` are the
defaults per NPU dtype: wide enough for a different accumulation order, narrow enough to catch a
lower-precision kernel (HF32 matmul/convolution, a half-precision accumulator) or a wrong one.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

#: dtype name -> (rtol, atol)
TOLERANCES: Dict[str, Tuple[float, float]] = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-4, 1e-5),
    "float16": (2e-3, 1e-4),
    "bfloat16": (1.6e-2, 1e-3),
}


@dataclass(frozen=True)
class Metrics:
    """The comparison of one output: ``violation`` is max |npu - ref| / (atol + rtol * |ref|) over the
    elements (> 1 means the output departs); ``nan_origin`` is True when the NPU result has a NaN or
    Inf where the reference has a finite value."""

    max_abs: float
    max_rel: float
    cosine: float
    ulp: float
    violation: float
    nan_origin: bool
    numel: int

    dtype_loss: str = ""  # the wider dtype the host computed where the NPU gave a narrower one

    @property
    def departs(self) -> bool:
        return self.nan_origin or bool(self.dtype_loss) or self.violation > 1.0

    def with_dtype_loss(self, wider: str) -> "Metrics":
        return dataclasses.replace(self, dtype_loss=wider)

    def to_dict(self) -> dict:
        return {"max_abs": _finite(self.max_abs), "max_rel": _finite(self.max_rel), "cosine": _finite(self.cosine),
                "ulp": _finite(self.ulp), "violation": _finite(self.violation), "nan_origin": self.nan_origin,
                "numel": self.numel, "dtype_loss": self.dtype_loss or None}


def tolerance(dtype_name: str, overrides: Optional[Dict[str, Tuple[float, float]]] = None) -> Tuple[float, float]:
    """``(rtol, atol)`` for an NPU result of ``dtype_name`` (integers and bool: exact)."""
    table = {**TOLERANCES, **(overrides or {})}
    return table.get(dtype_name, (0.0, 0.0))


def measure(npu, ref, rtol: float, atol: float) -> Metrics:
    """Compare ``npu`` (any device; read as float64 on the host) with the host reference ``ref``."""
    import torch

    a = npu.detach().to("cpu", torch.float64) if npu.is_floating_point() or npu.is_complex() else \
        npu.detach().to("cpu").to(torch.float64)
    b = ref.detach().to("cpu").to(torch.float64)
    if a.is_complex() or b.is_complex():
        a, b = torch.view_as_real(a.to(torch.complex128)), torch.view_as_real(b.to(torch.complex128))
    a, b = a.reshape(-1), b.reshape(-1)
    numel = a.numel()
    if numel == 0 or torch.equal(a, b):  # the common case on the simulator: identical results
        return Metrics(0.0, 0.0, 1.0, 0.0, 0.0, False, numel)
    if bool(torch.isfinite(a).all()) and bool(torch.isfinite(b).all()):
        diff = (a - b).abs_()
        mag = b.abs()
        max_abs = float(diff.max())
        max_rel = float((diff / mag.clamp_min(torch.finfo(torch.float64).tiny)).max())
        violation = float((diff / (atol + rtol * mag).clamp_min(1e-300)).max())
        if rtol == 0.0 and atol == 0.0:
            violation = math.inf if max_abs > 0 else 0.0
        norms = float(a.norm() * b.norm())
        cosine = float((a * b).sum() / norms) if norms > 0 else (1.0 if float(a.norm()) == float(b.norm()) else 0.0)
        return Metrics(max_abs, max_rel, cosine, _ulp(npu, diff, b, torch.ones_like(a, dtype=torch.bool)),
                       violation, False, numel)
    finite_b = torch.isfinite(b)
    nan_origin = bool((~torch.isfinite(a) & finite_b).any())
    both = torch.isfinite(a) & finite_b
    same_special = (~torch.isfinite(a) & ~finite_b) & ((a == b) | (torch.isnan(a) & torch.isnan(b)))
    diff = torch.where(both, (a - b).abs(), torch.zeros_like(a))
    mismatch_special = ~both & ~same_special & ~(~torch.isfinite(a) & finite_b)
    max_abs = float(diff.max()) if both.any() else 0.0
    rel = diff / b.abs().clamp_min(torch.finfo(torch.float64).tiny)
    max_rel = float(torch.where(both, rel, torch.zeros_like(rel)).max())
    bound = atol + rtol * b.abs()
    violation = float(torch.where(both, diff / bound.clamp_min(1e-300), torch.zeros_like(diff)).max())
    if bool(mismatch_special.any()):  # e.g. +Inf on the NPU where the reference has -Inf
        violation = math.inf
    if rtol == 0.0 and atol == 0.0:
        violation = math.inf if max_abs > 0 else 0.0
    aa, bb = torch.where(both, a, 0.0), torch.where(both, b, 0.0)
    norms = float(aa.norm() * bb.norm())
    cosine = float((aa * bb).sum() / norms) if norms > 0 else (1.0 if float(aa.norm()) == float(bb.norm()) else 0.0)
    return Metrics(max_abs, max_rel, cosine, _ulp(npu, diff, b, both), violation, nan_origin, numel)


def _ulp(npu, diff, b, both) -> float:
    """Largest error in units in the last place of the NPU result's dtype, at the reference value."""
    import torch

    if not npu.is_floating_point():
        return float(diff.max()) if both.any() else 0.0
    info = torch.finfo(npu.dtype)
    mag = b.abs().clamp_min(info.tiny)
    spacing = torch.exp2(torch.floor(torch.log2(mag))) * info.eps
    return float(torch.where(both, diff / spacing, torch.zeros_like(diff)).max())


def _finite(value: float):
    return value if math.isfinite(value) else str(value)
