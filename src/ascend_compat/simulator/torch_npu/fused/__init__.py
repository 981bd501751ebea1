"""Exact CPU references of torch_npu's fused ops, with torch_npu 2.14's signatures and semantics.

Pure torch code, so the ops run on CPU tensors and on the simulated ``npu`` device alike and are
differentiable through autograd. Importing registers nothing: the stand-in's ``_op_registry`` registers
:data:`OVERLOADS` as the ``torch.ops.npu`` kernels, which ``torch_npu.<name>`` binds (refusing CPU
tensors as torch_npu does). Each module's docstring states the contract and its sources; the public
projects that call each op are listed in :mod:`.usage`.
"""
from __future__ import annotations

from ascend_compat.simulator.torch_npu.fused.activations import (
    fast_gelu,
    npu_clipped_swiglu,
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
    npu_fused_infer_attention_score_v2,
    npu_incre_flash_attention,
    npu_prompt_flash_attention,
)
from ascend_compat.simulator.torch_npu.fused.kv_cache import npu_scatter_pa_kv_cache
from ascend_compat.simulator.torch_npu.fused.matmul import npu_bmmV2, npu_grouped_matmul, npu_linear, npu_transpose_batchmatmul
from ascend_compat.simulator.torch_npu.fused.moe import (
    npu_moe_compute_expert_tokens,
    npu_moe_finalize_routing,
    npu_moe_gating_top_k,
    npu_moe_gating_top_k_softmax,
    npu_moe_init_routing,
    npu_moe_init_routing_v2,
    npu_moe_token_permute,
    npu_moe_token_unpermute,
)
from ascend_compat.simulator.torch_npu.fused.norms import npu_add_layer_norm, npu_add_rms_norm, npu_gemma_rms_norm, npu_rms_norm
from ascend_compat.simulator.torch_npu.fused.optim import npu_apply_adam, npu_apply_adam_w
from ascend_compat.simulator.torch_npu.fused.rotary import npu_apply_rotary_pos_emb, npu_interleave_rope, npu_rotary_mul
from ascend_compat.simulator.torch_npu.fused.softmax import npu_scaled_masked_softmax
from ascend_compat.simulator.torch_npu.fused.quant import (
    npu_anti_quant,
    npu_dynamic_quant,
    npu_dynamic_quant_asymmetric,
    npu_quant_matmul,
    npu_quantize,
    npu_trans_quant_param,
    npu_weight_quant_batchmatmul,
)
from ascend_compat.simulator.torch_npu.fused.tensor_ops import (
    get_npu_format,
    npu_broadcast,
    npu_dropout_with_add_softmax,
    npu_layer_norm_eval,
    npu_max,
    npu_min,
    npu_mish,
    npu_one_hot,
    npu_pad,
    npu_scatter_nd_update,
    npu_scatter_nd_update_,
    npu_silu,
    npu_silu_,
    npu_slice,
    npu_softmax_cross_entropy_with_logits,
    npu_sort_v2,
    npu_top_k_top_p,
    npu_transpose,
    scatter_update,
    scatter_update_,
)
from ascend_compat.simulator.torch_npu.fused.transforms import (
    get_format,
    npu_confusion_transpose,
    npu_dtype_cast,
    npu_format_cast,
    npu_format_cast_,
)

#: torch_npu op overload (default overload bare) -> its CPU reference; registered as ``torch.ops.npu``
#: kernels by the stand-in's ``_op_registry``
OVERLOADS = {
    name: globals()[name] for name in (
        "fast_gelu", "get_npu_format", "npu_add_layer_norm", "npu_add_rms_norm", "npu_anti_quant", "npu_apply_adam", "npu_apply_adam_w",
        "npu_apply_rotary_pos_emb", "npu_bmmV2", "npu_broadcast", "npu_clipped_swiglu", "npu_confusion_transpose",
        "npu_dropout_with_add_softmax", "npu_dtype_cast", "npu_dynamic_quant", "npu_dynamic_quant_asymmetric",
        "npu_fast_gelu", "npu_format_cast", "npu_format_cast_", "npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2",
        "npu_fusion_attention", "npu_fusion_attention_grad", "npu_fusion_attention_v2", "npu_geglu", "npu_gelu",
        "npu_gelu_mul", "npu_gemma_rms_norm", "npu_grouped_matmul", "npu_incre_flash_attention", "npu_interleave_rope",
        "npu_layer_norm_eval", "npu_linear", "npu_mish", "npu_moe_compute_expert_tokens",
        "npu_moe_finalize_routing", "npu_moe_gating_top_k", "npu_moe_gating_top_k_softmax", "npu_moe_init_routing",
        "npu_moe_init_routing_v2", "npu_moe_token_permute", "npu_moe_token_unpermute", "npu_one_hot", "npu_pad", "npu_prompt_flash_attention", "npu_quant_matmul",
        "npu_quantize", "npu_rms_norm", "npu_rotary_mul", "npu_scaled_masked_softmax", "npu_scatter_nd_update",
        "npu_scatter_nd_update_", "npu_scatter_pa_kv_cache", "npu_silu", "npu_silu_", "npu_slice", "npu_softmax_cross_entropy_with_logits",
        "npu_sort_v2", "npu_swiglu", "npu_top_k_top_p", "npu_trans_quant_param", "npu_transpose", "npu_transpose_batchmatmul",
        "npu_weight_quant_batchmatmul", "scatter_update", "scatter_update_")
}
OVERLOADS.update({"npu_format_cast.Tensor": npu_format_cast, "npu_format_cast_.acl_format": npu_format_cast_,
                  "npu_max.dim": npu_max, "npu_min.dim": npu_min, "npu_grouped_matmul.List": npu_grouped_matmul})

#: overloads whose reference computes output shapes from input shapes alone (registered for Meta too)
META_SAFE = frozenset({
    "fast_gelu", "npu_fast_gelu", "npu_gelu", "npu_gelu_mul", "npu_swiglu", "npu_geglu", "npu_rms_norm",
    "npu_gemma_rms_norm", "npu_add_rms_norm", "npu_add_layer_norm", "npu_rotary_mul", "npu_apply_rotary_pos_emb", "npu_silu", "npu_mish",
    "npu_layer_norm_eval", "npu_transpose", "npu_slice", "npu_broadcast", "npu_pad", "npu_sort_v2", "npu_max.dim",
    "npu_min.dim", "npu_linear", "npu_bmmV2", "npu_confusion_transpose", "npu_one_hot",
    "npu_softmax_cross_entropy_with_logits", "npu_moe_gating_top_k_softmax", "npu_dynamic_quant", "npu_quant_matmul",
    "npu_weight_quant_batchmatmul", "npu_anti_quant", "npu_scaled_masked_softmax", "npu_clipped_swiglu",
    "npu_interleave_rope", "npu_transpose_batchmatmul",
})

__all__ = ["OVERLOADS", "META_SAFE", "get_format"] + sorted({k.split(".")[0] for k in OVERLOADS})
