"""CPU reference of ``torch_npu.npu_scaled_masked_softmax(x, mask, scale=1, fixed_triu_mask=False)``.

``y = softmax((x·scale).masked_fill(mask, -10000), dim=-1)`` computed in float32 and returned in
x's dtype; mask is bool, True = masked, broadcastable to x; ``fixed_triu_mask=True`` replaces it by
``triu(ones(H, W), 1)``. x's last two dims (H, W) must lie in [32, 4096] and be multiples of 32.
Sources: the wheel's ``_op_plugin_docs.py``, op-plugin docs ``torch_npu-npu_scaled_masked_softmax.md``,
CANN ScaledMaskedSoftmax(Grad) docs and Huawei's accuracy-checker golden function (fill -10000).
"""
from __future__ import annotations

import torch

from ascend_compat.simulator.torch_npu.fused._errors import check, check_float_dtype

_FILL = -10000.0


def npu_scaled_masked_softmax(x: torch.Tensor, mask: torch.Tensor, scale: float = 1.0,
                              fixed_triu_mask: bool = False) -> torch.Tensor:
    """``torch_npu.npu_scaled_masked_softmax``; see the module docstring."""
    op = "npu_scaled_masked_softmax"
    check_float_dtype(op, "x", x)
    check(mask.dtype == torch.bool, f"{op}: mask must be torch.bool (True = masked), got {mask.dtype}.", "TYPE")
    check(x.dim() >= 2, f"{op}: x must have at least 2 dims, got {list(x.shape)}.")
    h, w = x.shape[-2], x.shape[-1]
    check(all(32 <= s <= 4096 and s % 32 == 0 for s in (h, w)),
          f"{op}: the last two dims of x must be in [32, 4096] and divisible by 32, got {h}x{w}.")
    if fixed_triu_mask:
        mask = torch.ones(h, w, dtype=torch.bool, device=x.device).triu(1)
    try:
        torch.broadcast_shapes(mask.shape, x.shape)
    except RuntimeError:
        check(False, f"{op}: mask {list(mask.shape)} cannot be broadcast to x {list(x.shape)}.")
    logits = (x.float() * scale).masked_fill(mask, _FILL)
    return torch.softmax(logits, dim=-1).to(x.dtype)
