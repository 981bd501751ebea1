"""Rule ``float64``: float64 on the device."""
from __future__ import annotations

import ast

from ascend_compat.analysis.rules.base import PARTIAL, Rule

RULE = Rule('float64', 'numerics', PARTIAL, 'float64 on the device',
            "Ascend NPUs have no float64 compute for most ops: by default float64 reaches the NPU as "
            "written and ops whose kernel lacks it fail or compute in float32; under the shim's float64 "
            'policy WARN or SILENT it becomes float32 (results change in the low digits; code that relies on'
            ' double precision, e.g. RoPE frequency tables, loses accuracy); with policy ERROR it raises.',
            'use float32 on the NPU (compute float64 parts on the CPU if precision matters).', order=22)
TRIGGERS = ("float64", "double", "complex128", "from_numpy")
#: dtype names and their NPU replacement
FLOAT64 = {"torch.float64": "torch.float32", "torch.double": "torch.float32",
           "torch.complex128": "torch.complex64", "torch.cdouble": "torch.complex64"}


def qualname(q: str, version):
    if q in FLOAT64:
        return (RULE.id, RULE.handling, f"{q}: no float64 compute on NPU; on the device it becomes float32 under the "
                "shim (numerics change) or fails", f"use {FLOAT64[q]} on the NPU (keep float64 math on the CPU).")
    return None


def on_call(v, node, q, attr) -> None:
    """``x.double()``; ``torch.from_numpy`` of a float64 array (NumPy's default dtype)."""
    args = node.args
    if attr == "double" and not node.keywords and len(args) <= (0 if q is None else 1) and not (q and v.classify(q)):
        v.report(node, RULE.id, ".double(): float64 on the NPU becomes float32 under the shim (numerics change) "
                 "or fails", "use .float() on the NPU.")
    elif q == "torch.from_numpy":
        a = args[0] if args else None
        f64 = (type(a) is ast.Name and a.id in v.f64_arrays) or (type(a) is ast.Call and v.numpy_float64(a))
        if type(a) is ast.Name and not f64:
            v.dynamic_names.add(a.id)  # its assignment may sit in a statement the prefilter skipped
        if f64:
            v.report(node, RULE.id, "torch.from_numpy of a float64 array (NumPy's default dtype): float64 on the NPU",
                     "use torch.from_numpy(a).float(), or create the array with dtype=np.float32.")
