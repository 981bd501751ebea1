"""CPU references of torch_npu's layout/dtype helpers (torch_npu 2.14 schemas).

* ``npu_confusion_transpose(self, perm, shape, transpose_first)``: ``permute(perm)`` then
  ``reshape(shape)`` when ``transpose_first`` else ``reshape(shape)`` then ``permute(perm)``.
* ``npu_dtype_cast(self, dtype, input_dtype=None)``: ``self.to(dtype)``; ``dtype`` may be a
  ``torch.dtype`` or torch_npu's integer enum (c10 ScalarType numbering).
* ``npu_format_cast(self, acl_format, *, customize_dtype=None, input_dtype=None)`` and
  ``npu_format_cast_``: the simulated NPU stores every tensor in ND layout, so data is unchanged;
  the requested ACL format is recorded on the result as ``_ascend_compat_npu_format`` (read by
  the stand-in's ``get_npu_format``). A different format returns a new tensor, as torch_npu does.
"""
from __future__ import annotations

import torch

from ascend_compat.simulator.torch_npu.fused._errors import check

FORMAT_ATTR = "_ascend_compat_npu_format"
ACL_FORMAT_ND = 2
_DTYPE_ENUM = {
    0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64, 5: torch.float16,
    6: torch.float32, 7: torch.float64, 9: torch.complex64, 10: torch.complex128, 11: torch.bool,
    15: torch.bfloat16,
}


def npu_confusion_transpose(self: torch.Tensor, perm, shape, transpose_first: bool) -> torch.Tensor:
    """``torch_npu.npu_confusion_transpose``; see the module docstring."""
    perm, shape = [int(p) for p in perm], [int(s) for s in shape]
    if transpose_first:
        check(len(perm) == self.dim(), f"npu_confusion_transpose: perm {perm} does not match the {self.dim()}-D "
                                       "input.")
        return self.permute(perm).reshape(shape)
    out = self.reshape(shape)
    check(len(perm) == out.dim(), f"npu_confusion_transpose: perm {perm} does not match shape {shape}.")
    return out.permute(perm)


def npu_dtype_cast(self: torch.Tensor, dtype, input_dtype=None) -> torch.Tensor:
    """``torch_npu.npu_dtype_cast``: cast to ``dtype`` (torch.dtype or torch_npu enum value)."""
    if not isinstance(dtype, torch.dtype):
        check(dtype in _DTYPE_ENUM, f"Parameter(dtype) enum value:{dtype} not found in "
                                    "TORCH_DTYPE_ENUM_VALUE_TO_SCALAR_TYPE_MAP, please check.")
        dtype = _DTYPE_ENUM[dtype]
    if input_dtype is not None and not isinstance(input_dtype, torch.dtype):
        check(input_dtype in _DTYPE_ENUM, f"npu_dtype_cast: unsupported input_dtype enum value {input_dtype}.")
    return self.to(dtype)


def get_format(t: torch.Tensor) -> int:
    """The ACL format recorded on ``t`` by :func:`npu_format_cast` (ND = 2 when never cast)."""
    return getattr(t, FORMAT_ATTR, ACL_FORMAT_ND)


def _format_of(acl_format) -> int:
    if isinstance(acl_format, torch.Tensor):
        return get_format(acl_format)
    check(isinstance(acl_format, int) and acl_format >= 0, f"npu_format_cast: acl_format must be a non-negative "
                                                            f"int, got {acl_format!r}.")
    return int(acl_format)


def npu_format_cast(self: torch.Tensor, acl_format, *, customize_dtype=None, input_dtype=None) -> torch.Tensor:
    """``torch_npu.npu_format_cast``: same data, format recorded; returns ``self`` if unchanged."""
    fmt = _format_of(acl_format)
    if fmt == get_format(self):
        return self
    out = self.clone()
    setattr(out, FORMAT_ATTR, fmt)
    return out


def npu_format_cast_(self: torch.Tensor, acl_format, *, customize_dtype=None, input_dtype=None) -> torch.Tensor:
    """``torch_npu.npu_format_cast_``: record the format on ``self`` in place and return it."""
    setattr(self, FORMAT_ATTR, _format_of(acl_format))
    return self
