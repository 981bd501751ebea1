"""Facts about single aten ops on torch_npu, read by every tool that judges ops (``audit``,
``FallbackMonitor``, ``profile``, ``compare``) and by the simulated NPU that reproduces them.

* :data:`FALLBACK_REWRITES` - for ops torch_npu runs on the CPU, a rewrite with native kernels;
* :func:`dtype_refusals` - the dtypes torch_npu's kernel for an overload refuses, from the generated
  table ``data/dtype_support.json`` (op-plugin kernels refusing float64, aclnn APIs recorded without a
  dtype). Everything else runs in the dtype it is given: float64 computes in float64 where the
  aclnn kernel lists DT_DOUBLE, as torch_npu's own float64 tests show;
* :func:`downcasts_to_float32` - torch_npu's float64 rule for ``_to_copy``: a dtype-only cast of a
  device tensor to float64 (``x.double()``, ``x.to(torch.float64)``) gives float32, with the one-time
  message :func:`float64_downcast_message`;
* :data:`LIBRARY_SYNCS` - torch functions that read a device value on the host on the user's behalf.

Dtypes are named as torch names them without the ``torch.`` prefix (``"float64"``).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

__all__ = ["FALLBACK_REWRITES", "rewrite_for", "DtypeRefusal", "CANN_DTYPES", "dtype_refusals",
           "downcasts_to_float32", "float64_downcast_message", "LIBRARY_SYNCS"]

#: op (base name) -> (advice, aten overloads the advice runs on: each native in every torch_npu table, tested).
FALLBACK_REWRITES: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "mode": ("for non-negative integers, torch.bincount(x).argmax() gives the most frequent value with "
             "native kernels (ties: the smallest, as torch.mode returns on the CPU)", ("bincount", "argmax.out")),
    "fmax": ("torch.maximum runs natively and equals torch.fmax when no input is NaN",
             ("maximum", "maximum.out")),
    "fmin": ("torch.minimum runs natively and equals torch.fmin when no input is NaN",
             ("minimum", "minimum.out")),
    "heaviside": ("torch.where(x > 0, 1.0, torch.where(x == 0, values, 0.0)) computes it with native kernels",
                  ("where.self", "gt.Scalar", "eq.Scalar")),
    "histogram": ("for equal-width bins, torch.histc runs natively (bin edges: "
                  "torch.linspace(min, max, bins + 1))", ("histc", "linspace")),
    "nonzero_static": ("torch.nonzero runs natively; pad or cut its result to the static size",
                       ("nonzero",)),
}


def rewrite_for(op: str) -> Optional[str]:
    """The known rewrite of a falling-back op (``"aten::fmax.out"``, ``"mode"``), or None."""
    base = op.split("::", 1)[-1].split(".")[0]
    entry = FALLBACK_REWRITES.get(base)
    return entry[0] if entry is not None else None


#: CANN dtype names used in the dtype records -> torch dtype names
CANN_DTYPES = {
    "DT_DOUBLE": "float64", "DT_FLOAT": "float32", "DT_FLOAT16": "float16", "DT_BFLOAT16": "bfloat16",
    "DT_INT8": "int8", "DT_INT16": "int16", "DT_INT32": "int32", "DT_INT64": "int64", "DT_UINT8": "uint8",
    "DT_BOOL": "bool", "DT_COMPLEX32": "complex32", "DT_COMPLEX64": "complex64", "DT_COMPLEX128": "complex128",
}


@dataclass(frozen=True)
class DtypeRefusal:
    """torch_npu's kernel for an overload refuses a ``self`` of ``dtype``.

    ``kind``: ``"kernel"`` (the op-plugin kernel checks it: ``message`` and ``error`` code are its) or
    ``"aclnn"`` (the aclnn API ``api`` lacks the CANN dtype ``cann_dtype``: status 161002).
    ``needs_dim``: the refusing API is only called when ``dim`` is given (``...WithDim`` APIs).
    """

    op: str
    dtype: str
    kind: str
    message: str = ""
    error: str = ""
    api: str = ""
    cann_dtype: str = ""
    needs_dim: bool = False

    @property
    def reason(self) -> str:
        """One line saying what torch_npu does."""
        if self.kind == "kernel":
            return f"torch_npu's kernel refuses {self.dtype}: {self.message.strip()} ({self.error})"
        return f"torch_npu calls {self.api}, which has no {self.cann_dtype} kernel (error 161002)"


@functools.lru_cache(maxsize=1)
def _table() -> dict:
    from ascend_compat import data

    return data.load_table("dtype_support.json")


@functools.lru_cache(maxsize=None)
def dtype_refusals(op: str) -> Dict[str, DtypeRefusal]:
    """dtype name -> :class:`DtypeRefusal` for aten overload ``op`` (``"sort.stable"``, ``"max.dim"``,
    default overload bare); empty when torch_npu's records say nothing against it."""
    table = _table()
    refusal = table["refuses_float64"].get(op)
    if refusal is not None:
        return {"float64": DtypeRefusal(op, "float64", "kernel", message=refusal["message"],
                                        error=refusal["error"])}
    found: Dict[str, DtypeRefusal] = {}
    for api, entry in sorted(table["aclnn_dtype_gaps"].items()):
        if op not in entry["aten"]:
            continue
        for cann in entry["dtypes"]:
            found[CANN_DTYPES[cann]] = DtypeRefusal(op, CANN_DTYPES[cann], "aclnn", api=api, cann_dtype=cann,
                                                    needs_dim=api.endswith("WithDim"))
    return found


@functools.lru_cache(maxsize=1)
def gap_overloads() -> frozenset:
    """Every aten overload with a recorded aclnn dtype gap (``"isclose"``, ``"max.dim"``, ...)."""
    return frozenset(op for entry in _table()["aclnn_dtype_gaps"].values() for op in entry["aten"])


def downcasts_to_float32(self_dtype: str, dtype: Optional[str], layout_given: bool = False,
                         device_given: bool = False) -> bool:
    """True when torch_npu's ``_to_copy`` of a device tensor of ``self_dtype`` asked for ``dtype``
    gives float32 instead: float64 asked for by dtype alone (no layout, no device) from another dtype
    (``ToKernelNpu.cpp``). complex128 is not replaced."""
    return dtype == "float64" and not layout_given and not device_given and self_dtype != "float64"


def float64_downcast_message() -> str:
    """torch_npu's one-time message for that downcast (``TORCH_NPU_WARN_ONCE``), verbatim."""
    return _table()["to_copy_downcast"]["message"]


#: (file suffix, function) of torch code that synchronises with the device on the user's behalf -> a
#: label. ``GradScaler.step`` reads ``found_inf`` with ``.item()`` before calling ``optimizer.step()``
#: unless the optimizer takes the check itself (``_step_supports_amp_scaling``: the fused optimizers)
LIBRARY_SYNCS: Dict[Tuple[str, str], str] = {
    ("torch/amp/grad_scaler.py", "_maybe_opt_step"): "GradScaler.step",
}
