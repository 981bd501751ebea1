"""Which public Ascend ports call which torch_npu op: the evidence behind the choice of CPU references.

Counted as ``torch_npu.<op>`` references in the ``*.py`` files of vllm-project/vllm-ascend @ 182b75ea84, Ascend/MindSpeed @ 028de58c, hiyouga/LLaMA-Factory @ ff6d4d12e, huggingface/diffusers @ 58eb52c080 (November 2026 snapshots);
transformers' ``integrations/npu_flash_attention.py`` calls ``npu_fusion_attention`` only. Ops imported
under another name (``from torch_npu import npu_x``) are not counted. :data:`CALLERS`: the simulated ops
these projects call, with counts; :data:`NOT_SIMULATED`: the most-called ops without a reference (MX/int4
formats, paged KV caches in NZ layout, fused communication kernels: hardware-specific layouts).
"""
from __future__ import annotations

#: simulated op -> {project: number of references}
CALLERS = {
    'npu_format_cast': {'vllm-ascend': 104},
    'npu_grouped_matmul': {'LLaMA-Factory': 6, 'MindSpeed': 42, 'vllm-ascend': 29},
    'npu_quant_matmul': {'MindSpeed': 17, 'vllm-ascend': 48},
    'npu_fusion_attention': {'MindSpeed': 32, 'diffusers': 1, 'vllm-ascend': 9},
    'npu_fused_infer_attention_score': {'vllm-ascend': 40},
    'npu_dynamic_quant': {'MindSpeed': 7, 'vllm-ascend': 31},
    'npu_rms_norm': {'LLaMA-Factory': 3, 'MindSpeed': 5, 'diffusers': 1, 'vllm-ascend': 23},
    'npu_swiglu': {'LLaMA-Factory': 3, 'MindSpeed': 3, 'vllm-ascend': 19},
    'npu_scatter_pa_kv_cache': {'vllm-ascend': 16},
    'npu_add_rms_norm': {'MindSpeed': 2, 'vllm-ascend': 13},
    'npu_moe_token_unpermute': {'LLaMA-Factory': 3, 'MindSpeed': 1, 'vllm-ascend': 11},
    'npu_fused_infer_attention_score_v2': {'vllm-ascend': 14},
    'npu_rotary_mul': {'LLaMA-Factory': 4, 'vllm-ascend': 7},
    'npu_fusion_attention_grad': {'MindSpeed': 10},
    'npu_moe_init_routing_v2': {'vllm-ascend': 9},
    'npu_moe_token_permute': {'LLaMA-Factory': 3, 'MindSpeed': 1, 'vllm-ascend': 5},
    'npu_clipped_swiglu': {'vllm-ascend': 6},
    'npu_interleave_rope': {'vllm-ascend': 6},
    'npu_transpose_batchmatmul': {'vllm-ascend': 6},
    'npu_scaled_masked_softmax': {'MindSpeed': 5},
    'npu_scatter_nd_update_': {'vllm-ascend': 5},
    'get_npu_format': {'vllm-ascend': 4},
    'npu_quantize': {'MindSpeed': 1, 'vllm-ascend': 3},
    'npu_apply_rotary_pos_emb': {'vllm-ascend': 3},
    'npu_fast_gelu': {'vllm-ascend': 3},
    'npu_moe_gating_top_k_softmax': {'vllm-ascend': 3},
    'npu_apply_adam_w': {'MindSpeed': 2},
    'npu_geglu': {'diffusers': 2},
    'npu_prompt_flash_attention': {'vllm-ascend': 2},
    'npu_top_k_top_p': {'vllm-ascend': 2},
    'npu_weight_quant_batchmatmul': {'vllm-ascend': 2},
    'npu_moe_finalize_routing': {'vllm-ascend': 1},
    'npu_moe_gating_top_k': {'vllm-ascend': 1},
}

#: the most-called ops without a CPU reference, most-called first
NOT_SIMULATED = (
    'npu_dynamic_mx_quant', 'npu_dynamic_mx_quant_with_dual_axis', 'npu_grouped_dynamic_mx_quant',
    'npu_convert_weight_to_int4pack', 'npu_dynamic_block_quant', 'npu_kronecker_quant',
    'npu_mm_reduce_scatter_base', 'npu_gather_pa_kv_cache', 'npu_all_gather_base_mm',
    'npu_dynamic_block_mx_quant', 'npu_attention_update', 'npu_kv_rmsnorm_rope_cache',
    '_npu_fused_infer_attention_score_get_max_workspace', 'npu_alltoallv_gmm', 'npu_gmm_alltoallv',
    'npu_matmul_compress_dequant', 'npu_moe_distribute_dispatch_v2', 'npu_chunk_gated_delta_rule',
    'npu_quant_grouped_matmul_dequant', 'npu_kv_quant_sparse_flash_attention', 'npu_mla_prolog_v3',
    '_npu_fused_infer_attention_score_v2_get_max_workspace', 'npu_lightning_indexer', 'npu_grouped_matmul_swiglu_quant_v2',
)
