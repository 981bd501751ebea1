"""Exact CPU references of torch_npu's fused ops, with torch_npu 2.14's signatures and semantics.

Pure torch code, so the ops run on CPU tensors and on the simulated ``npu`` device alike and are
differentiable through autograd. Importing registers nothing: the ``torch_npu`` stand-in re-exports
these names as ``torch_npu.<name>``. Each module's docstring states the contract and its sources.
"""
from __future__ import annotations

from ascend_compat.simulator.torch_npu.fused.activations import (
    fast_gelu,
    npu_fast_gelu,
    npu_geglu,
    npu_gelu,
    npu_gelu_mul,
    npu_swiglu,
)
from ascend_compat.simulator.torch_npu.fused.attention import (
    npu_fusion_attention,
    npu_fusion_attention_grad,
    npu_fusion_attention_v2,
)
from ascend_compat.simulator.torch_npu.fused.infer_attention import (
    npu_fused_infer_attention_score,
    npu_incre_flash_attention,
    npu_prompt_flash_attention,
)
from ascend_compat.simulator.torch_npu.fused.norms import npu_add_rms_norm, npu_gemma_rms_norm, npu_rms_norm
from ascend_compat.simulator.torch_npu.fused.optim import npu_apply_adam, npu_apply_adam_w
from ascend_compat.simulator.torch_npu.fused.rotary import npu_apply_rotary_pos_emb, npu_rotary_mul
from ascend_compat.simulator.torch_npu.fused.softmax import npu_scaled_masked_softmax
from ascend_compat.simulator.torch_npu.fused.transforms import (
    get_format,
    npu_confusion_transpose,
    npu_dtype_cast,
    npu_format_cast,
    npu_format_cast_,
)

__all__ = [
    "fast_gelu",
    "get_format",
    "npu_add_rms_norm",
    "npu_apply_adam",
    "npu_apply_adam_w",
    "npu_apply_rotary_pos_emb",
    "npu_confusion_transpose",
    "npu_dtype_cast",
    "npu_fast_gelu",
    "npu_format_cast",
    "npu_format_cast_",
    "npu_fused_infer_attention_score",
    "npu_fusion_attention",
    "npu_fusion_attention_grad",
    "npu_fusion_attention_v2",
    "npu_geglu",
    "npu_gelu",
    "npu_gelu_mul",
    "npu_gemma_rms_norm",
    "npu_incre_flash_attention",
    "npu_prompt_flash_attention",
    "npu_rms_norm",
    "npu_rotary_mul",
    "npu_scaled_masked_softmax",
    "npu_swiglu",
]
