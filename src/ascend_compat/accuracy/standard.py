"""The accuracy standard: is the NPU's result of one op worse than the CUDA result would be?

Judged as msprobe's API accuracy pre-check judges an API (Ascend/mstt,
``debug/accuracy_tools/msprobe/pytorch/api_accuracy_checker/precision_standard/`` and
``compare/api_precision_standard.yaml``; the lists and numbers are generated into
``ascend_compat/data/accuracy_standard.json`` by ``tools/gen_accuracy_standard.py``). Three results of
the same op on the same inputs are compared: the NPU's (``npu``), a **stand-in** for the CUDA result
(``standin``: the same dtypes computed on the host, TF32-rounded where CUDA's switches say so) and a
**golden** (``golden``: the inputs upcast to float64 on the host). Both the NPU's and the stand-in's
errors are measured against the golden, and the NPU's must not exceed the stand-in's by more than the
standard allows for the op and its dtype. One standard per op (``judge`` picks it):

* ``binary_consistency`` (integer and bool outputs, and msprobe's BinaryCompareStandard list: relu,
  neg, gather, sort, casts ...; ``binary_consistency.py``): the NPU's result equals the stand-in's
  bit for bit (NaN equals NaN).
* ``absolute_threshold`` (add, sub, mul, div, rsqrt, reciprocal, square, leaky_relu ...;
  ``absolute_threshold.py``): every normal value within ``rtol`` relative of the golden, every small value
  (``|golden| <= small_value``) within ``small_value_atol``, and NaN/Inf where the golden has them;
  ``StandardConfig``'s per-dtype numbers. Where the stand-in fails this too (an ``add`` with ``alpha``
  cancelling), the op is judged by the benchmark comparison instead (ours: the standard's aim is
  "not worse than CUDA").
* ``ulp`` (mm, addmm, bmm, baddbmm, mv ...; ``ulp_compare.py``): errors in units in the last place of the
  golden's exponent (mantissa width and minimum exponent from ``torch.finfo``, msprobe's
  ``ULP_PARAMETERS``); float32 passes with a mean ULP error below 64, or fewer than 5% of elements
  beyond 32 ULP, or no larger such share than the stand-in; float16/bfloat16 with fewer than 0.1% beyond
  1 ULP or no larger share than the stand-in. (msprobe passes a share *strictly* below the stand-in's;
  an equal share is passed here: equal to the stand-in is not worse than CUDA.)
* ``thousandth`` (convolution and its backward, msprobe's conv1d/conv2d; ``thousandth_standard.py``): at
  least 99.9% of elements within 0.1% relative of the golden, or (ours) no larger share outside than
  the stand-in's; an element whose error is 0 counts as within.
* ``benchmark`` (every other op; ``benchmark_compare.py``): the small-value error share, the RMSE, the
  largest and the mean relative error of the NPU, each divided by the stand-in's (floored at the
  dtype's minimum error, ``_minmum_err``), must stay within 2, 2, 10 and 2. One change: for float32 the
  floor of the error magnitudes (RMSE, relative errors) is 2^-17 (64 float32 ULPs of 1.0, the mean ULP
  limit of msprobe's float32 ULP standard) instead of ``_minmum_err``'s 2^-14, which lets an error of
  several hundred ULPs on every element pass (a LayerNorm 5e-5 too large). The error balance is
  computed and shown, not judged (msprobe does not judge it either).

Every standard first checks NaN/Inf: a NaN or Inf in the NPU's result where the stand-in's is finite
departs (``nan_origin``). msprobe's accumulative-error standard lists no real API (only its
placeholder ``test_api``) and is not used. Judging needs the golden only when the NPU's result and the
stand-in's differ: equal results are not worse by definition (:func:`judge` is not called then).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

__all__ = ["Verdict", "judge", "standard_of", "STANDARDS", "FLOAT32_MAGNITUDE_FLOOR", "finite_or_text"]

STANDARDS = ("benchmark", "absolute_threshold", "binary_consistency", "ulp", "thousandth")

#: the floor of float32 error magnitudes in the benchmark ratios (see the module docstring)
FLOAT32_MAGNITUDE_FLOOR = 2.0 ** -17
_MAGNITUDES = ("rmse", "max_rel_err", "mean_rel_err")
_BENCHMARK = ("small_value_err_ratio", "rmse", "max_rel_err", "mean_rel_err")


@dataclass(frozen=True)
class Verdict:
    """How one output of one op call measures up. ``excess`` is the worst criterion's value over its limit
    (above 1 when the output departs); ``npu`` / ``standin`` hold each side's figures against the golden."""

    standard: str
    departs: bool
    criterion: str = ""
    excess: float = 0.0
    nan_origin: bool = False
    npu: Dict[str, float] = field(default_factory=dict)
    standin: Dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {"standard": self.standard, "departs": self.departs, "criterion": self.criterion or None,
                "excess": finite_or_text(self.excess), "nan_origin": self.nan_origin,
                "npu": {k: finite_or_text(v) for k, v in self.npu.items()},
                "standin": {k: finite_or_text(v) for k, v in self.standin.items()}}


@functools.lru_cache(maxsize=None)
def _table() -> Dict[str, Any]:
    from ascend_compat import data

    return data.accuracy_standard()


def _dtype_name(t) -> str:
    return str(t.dtype).replace("torch.", "")


def standard_of(op: str, npu) -> str:
    """The standard for output ``npu`` (a tensor) of op ``op`` (``"aten::add_.Tensor"``)."""
    if not (npu.is_floating_point() or npu.is_complex()):
        return "binary_consistency"
    base = op.split("::", 1)[-1].split(".", 1)[0]
    return _table()["ops"].get(base, "benchmark") if op.startswith("aten::") else "benchmark"


def _config(dtype: str) -> Dict[str, float]:
    table = _table()["dtype"]
    return table.get(dtype, table["default"])


def _as_float64(t):
    import torch

    t = t.detach().to("cpu")
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.to(torch.float64).reshape(-1)


def judge(op: str, npu, standin, golden, standard: Optional[str] = None) -> Verdict:
    """Judge ``npu`` (the NPU's output, any device) against ``standin`` (the CUDA stand-in's, same shape)
    with ``golden`` (the float64 host result) by ``standard`` (default: :func:`standard_of`)."""
    import torch

    standard = standard or standard_of(op, npu)
    if tuple(npu.shape) != tuple(standin.shape) or tuple(npu.shape) != tuple(golden.shape):
        return Verdict(standard, True, f"shape {tuple(npu.shape)}, the host gives {tuple(standin.shape)}", math.inf)
    dtype = _dtype_name(standin if npu.is_complex() else npu)
    if npu.is_complex():
        dtype = {"complex64": "float32", "complex128": "float64", "complex32": "float16"}.get(dtype, dtype)
    n, s, g = _as_float64(npu), _as_float64(standin), _as_float64(golden)
    if n.numel() == 0:
        return Verdict(standard, False)
    if standard == "binary_consistency":
        same = (n == s) | (torch.isnan(n) & torch.isnan(s))
        bad = int((~same).sum())
        return Verdict(standard, bad > 0, f"{bad} of {n.numel()} elements differ from the host's" if bad else "",
                       float(bad), bool((~torch.isfinite(n) & torch.isfinite(s)).any()))
    special = _inf_nan(n, g, dtype), _inf_nan(s, g, dtype)
    nan_origin = bool((~torch.isfinite(n) & torch.isfinite(s)).any())
    if special[0] > special[1]:
        return Verdict(standard, True, f"NaN/Inf in {special[0]:.3g} of the elements (the host: {special[1]:.3g})",
                       math.inf, nan_origin, {"inf_nan_err": special[0]}, {"inf_nan_err": special[1]})
    if standard == "absolute_threshold":
        verdict = _absolute_threshold(n, s, g, dtype)
        if verdict is not None:
            return verdict
        standard = "benchmark"
    if standard == "ulp":
        return _ulp(n, s, g, npu.dtype if not npu.is_complex() else torch.float32, dtype)
    if standard == "thousandth":
        return _thousandth(n, s, g)
    return _benchmark(n, s, g, dtype, standard)


# ----------------------------------------------------------------------------- the standards
def _finite_cast(g, dtype: str):
    """Where the golden, cast to the NPU's dtype, is finite (msprobe casts before testing)."""
    import torch

    torch_dtype = getattr(torch, dtype, torch.float64)
    return torch.isfinite(g.to(torch_dtype)) if torch_dtype.is_floating_point else torch.isfinite(g)


def _inf_nan(x, g, dtype: str) -> float:
    """Share of elements where ``x`` or the golden is NaN/Inf and they do not agree."""
    import torch

    gc = g.to(getattr(torch, dtype, torch.float64)).to(torch.float64)
    special = ~torch.isfinite(x) | ~torch.isfinite(gc)
    agree = (x == gc) | (torch.isnan(x) & torch.isnan(gc))
    return float((special & ~agree).sum()) / x.numel()


def _masks(x, g, dtype: str):
    import torch

    finite = torch.isfinite(x) & _finite_cast(g, dtype)
    small = finite & (g.abs() <= _config(dtype)["small_value"])
    return finite, small, finite & ~small


def _eps(dtype: str) -> float:
    """msprobe's eps added to |golden| in relative errors: its golden's dtype's (float32 for half inputs,
    float64 for float32) and bfloat16's own 2^-8 (``get_abs_bench_with_eps``)."""
    if dtype == "bfloat16":
        return _table()["bfloat16_eps"]
    return 2.0 ** -23 if dtype == "float16" else 2.0 ** -52


def _figures(x, g, dtype: str) -> Dict[str, float]:
    finite, small, normal = _masks(x, g, dtype)
    err = (x - g).abs()
    rel = err[normal] / (g[normal].abs() + _eps(dtype))
    n_small = int(small.sum())
    atol = _config(dtype)["benchmark_small_value_atol"]
    return {
        "small_value_err_ratio": float((err[small] > atol).sum()) / n_small if n_small else 0.0,
        "rmse": float(err[normal].square().mean().sqrt()) if rel.numel() else 0.0,
        "max_rel_err": float(rel.max()) if rel.numel() else 0.0,
        "mean_rel_err": float(rel.mean()) if rel.numel() else 0.0,
        "eb": float(abs(int((x > g).sum()) - int((x < g).sum()))) / x.numel(),
        "max_abs_err": float(err[finite].max()) if bool(finite.any()) else 0.0,
    }


def _benchmark(n, s, g, dtype: str, standard: str = "benchmark") -> Verdict:
    limits = _table()["benchmark_ratio"]
    floor = _config(dtype)["minimum_err"]
    a, b = _figures(n, g, dtype), _figures(s, g, dtype)
    worst, worst_excess = "", 0.0
    for metric in _BENCHMARK:
        low = FLOAT32_MAGNITUDE_FLOOR if dtype == "float32" and metric in _MAGNITUDES else floor
        ratio = a[metric] / max(b[metric], low)
        excess = ratio / limits[metric]
        if excess > worst_excess:
            worst_excess = excess
            worst = (f"{metric} {a[metric]:.3g} is {ratio:.3g}x the host's {b[metric]:.3g} "
                     f"(limit {limits[metric]:g}x)")
    return Verdict(standard, worst_excess > 1.0, worst if worst_excess > 1.0 else "", worst_excess, False, a, b)


def _absolute_fails(x, g, dtype: str):
    """(failing elements, worst error over its limit) of msprobe's absolute-threshold test."""
    cfg = _config(dtype)
    _, small, normal = _masks(x, g, dtype)
    err = (x - g).abs()
    rel = err[normal] / (g[normal].abs() + _eps(dtype))
    bad = int((rel > cfg["rtol"]).sum()) + int((err[small] > cfg["threshold_small_value_atol"]).sum())
    worst = max(float(rel.max() / cfg["rtol"]) if rel.numel() else 0.0,
                float(err[small].max() / cfg["threshold_small_value_atol"]) if bool(small.any()) else 0.0)
    return bad, worst


def _absolute_threshold(n, s, g, dtype: str) -> Optional[Verdict]:
    """The verdict, or None when the stand-in fails the threshold too (then the benchmark decides)."""
    bad, worst = _absolute_fails(n, g, dtype)
    if not bad:
        return Verdict("absolute_threshold", False, "", worst, False, {"bad_elements": 0.0, "worst": worst})
    host_bad, host_worst = _absolute_fails(s, g, dtype)
    if host_bad:
        return None
    cfg = _config(dtype)
    return Verdict("absolute_threshold", True,
                   f"{bad} of {n.numel()} elements beyond rtol {cfg['rtol']:.3g} (or atol "
                   f"{cfg['threshold_small_value_atol']:.3g} for |value| <= {cfg['small_value']:.3g}); "
                   f"worst {worst:.3g}x", worst, False, {"bad_elements": float(bad), "worst": worst},
                   {"bad_elements": 0.0, "worst": host_worst})


def _ulp_errors(x, g, torch_dtype):
    import torch

    info = torch.finfo(torch_dtype)
    mantissa, min_exp = -math.log2(info.eps), math.log2(info.tiny)
    mag = g.abs()
    eb = torch.where(mag == 0, torch.zeros_like(mag), torch.floor(torch.log2(mag))).clamp_min(min_exp)
    return (x - g).abs() * torch.exp2(mantissa - eb)


def _ulp(n, s, g, torch_dtype, dtype: str) -> Verdict:
    import torch

    cfg = _table()["ulp"]
    single = dtype == "float32"
    beyond = cfg["float32_ulp"] if single else cfg["float16_ulp"]
    finite = torch.isfinite(n) & torch.isfinite(s) & torch.isfinite(g)
    figures = []
    for x in (n, s):
        u = _ulp_errors(x[finite], g[finite], torch_dtype if torch_dtype.is_floating_point else torch.float64)
        figures.append({"mean_ulp_err": float(u.mean()) if u.numel() else 0.0,
                        "max_ulp_err": float(u.max()) if u.numel() else 0.0,
                        "ulp_err_proportion": float((u > beyond).sum()) / max(1, u.numel())})
    a, b = figures
    ratio = a["ulp_err_proportion"] / max(b["ulp_err_proportion"], _config(dtype)["minimum_err"])
    share_limit = cfg["float32_proportion"] if single else cfg["float16_proportion"]
    passed = (a["ulp_err_proportion"] < share_limit or ratio <= cfg["proportion_ratio"]
              or (single and a["mean_ulp_err"] < cfg["float32_mean_ulp_err"]))
    excess = ratio / cfg["proportion_ratio"]
    criterion = "" if passed else (
        f"{a['ulp_err_proportion']:.3g} of the elements beyond {beyond:g} ULP (the host: "
        f"{b['ulp_err_proportion']:.3g}; limit {share_limit:g}" +
        (f", or a mean below {cfg['float32_mean_ulp_err']:g} ULP: {a['mean_ulp_err']:.3g})" if single else ")"))
    return Verdict("ulp", not passed, criterion, excess if not passed else min(excess, 1.0), False, a, b)


def _thousandth(n, s, g) -> Verdict:
    cfg = _table()["thousandth"]
    shares = []
    for x in (n, s):
        err = (x - g).abs()
        rel = err / g.abs()
        outside = (rel >= cfg["rel_err"]) & (err > 0)
        shares.append(float(outside.sum()) / x.numel())
    a, b = shares
    allowed = 1.0 - cfg["pass_ratio"]
    passed = a <= allowed + 1e-12 or a <= b
    excess = a / max(allowed, b)
    criterion = "" if passed else (f"{a:.3g} of the elements beyond {cfg['rel_err']:g} relative error (the host: "
                                   f"{b:.3g}; limit {allowed:.3g})")
    return Verdict("thousandth", not passed, criterion, excess, False, {"thousandth_err_share": a},
                   {"thousandth_err_share": b})


def finite_or_text(value: float):
    """``value``, or its text (``"inf"``) where JSON has no number for it."""
    return value if math.isfinite(value) else str(value)

