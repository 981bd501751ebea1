"""Dtypes torch_npu's kernels refuse, per aten overload (generated table ``data/dtype_support.json``).

Two kinds of records, both from torch_npu's own sources (``tools/gen_dtype_support.py``), read
through the knowledge layer (``knowledge.operators.dtype_refusals``) as every tool reads them:

* op-plugin kernels that refuse float64 themselves (``refuses_float64``, e.g. ``sort.stable``:
  ``Input data type should not be float64`` + ERR01002);
* aclnn APIs torch_npu's maintainers recorded as lacking a dtype (``aclnn_dtype_gaps``, e.g.
  ``aclnnMaxDim`` without DT_DOUBLE behind ``max.dim``, ``aclnnIsClose`` without DT_BFLOAT16 and
  DT_COMPLEX64 behind ``isclose``): aclnn status 161002 with CANN's EZ1001 dtype-list message.

The dtype checked is the first argument's (``self``). Float64 refusals follow the simulator's
float64 mode (mode ``allow`` lets float64 through); the other gaps always apply, as on the
hardware. An API named ``...WithDim`` is only called when ``dim`` is given.
"""
from __future__ import annotations

import functools
import os
from typing import Callable, Optional

import torch

from ascend_compat.knowledge import operators
from ascend_compat.simulator import _float64

#: CANN dtype names used in the records -> torch dtypes
CANN_DTYPES = {cann: getattr(torch, name) for cann, name in operators.CANN_DTYPES.items()}


def _name(op) -> str:
    schema = op._schema
    return schema.name[len("aten::"):] + (f".{schema.overload_name}" if schema.overload_name else "")


#: ``CompositeImplicitAutograd`` ops whose outputs are never differentiable (bool): registering
#: torch_npu's kernel for them directly, as torch_npu does, loses no autograd formula
NON_DIFFERENTIABLE_COMPOSITES = frozenset({"isclose"})

gap_overloads = operators.gap_overloads


def shadows_composite(key: str) -> bool:
    """True when aten overload ``key`` (a ``CompositeImplicitAutograd`` op the emulated torch_npu
    implements natively) must reach the device as itself for its dtype gap to show. Differentiable
    composites (``repeat_interleave.self_int``) stay decomposed: the simulator does not emulate
    torch_npu's autograd kernels for them."""
    return key in NON_DIFFERENTIABLE_COMPOSITES and key in gap_overloads()


def op_check(op) -> Optional[Callable]:
    """A check ``fn(args, kwargs)`` raising torch_npu's error when aten overload ``op`` gets a
    ``self`` dtype its torch_npu kernel refuses, or None when the records say nothing against ``op``."""
    if not op._schema.name.startswith("aten::"):
        return None
    refusals = operators.dtype_refusals(_name(op))
    if not refusals:
        return None
    messages = {}
    dim_pos = None
    for dtype, refusal in refusals.items():
        if refusal.kind == "kernel":
            code = refusal.error.partition(" ")[0]
            messages[getattr(torch, dtype)] = functools.partial(_kernel_message, refusal.message, code)
        else:
            messages[getattr(torch, dtype)] = functools.partial(_aclnn_message, refusal.api, refusal.cann_dtype)
        if refusal.needs_dim:
            dim_pos = next((i for i, a in enumerate(op._schema.arguments) if a.name == "dim"), None)
    return _checker(messages, dim_pos)


def _checker(messages: dict, dim_pos: Optional[int]) -> Callable:
    def check(args, kwargs):
        if not args or not isinstance(args[0], torch.Tensor):
            return
        message = messages.get(args[0].dtype)
        if message is None or (args[0].dtype is torch.float64 and _float64.mode() == "allow"):
            return
        if dim_pos is not None:
            dim = args[dim_pos] if dim_pos < len(args) else kwargs.get("dim")
            if dim is None:
                return
        raise RuntimeError(message())
    return check


def _err_suffix(code: str) -> str:
    from ascend_compat.simulator import _error_code

    return _error_code.cpp_error(*_error_code.parse(code))


def _kernel_message(message: str, code: str) -> str:
    return message + _err_suffix(code)


def _aclnn_message(api: str, cann_dtype: str) -> str:
    return (f"NPU function error: call {api} failed, error code is 161002"
            + _err_suffix("ERR00100") + "\n"
            + f"EZ1001: [PID: {os.getpid()}] {api}: the dtype of self is {cann_dtype}, which should be in "
            f"dtype support list [...] (torch_npu records this API without {cann_dtype}; the simulator does "
            "not know the full list).")
