"""Fused ops torch_npu provides, and the op sequences of PyTorch code they replace.

One :class:`FusionRule` per fused op. Its ``chains`` describe the hand-written form as a path through
the data flow of the recorded forward ops (each op consuming the previous one's output; views, copies
and dtype casts in between are passed through): elements are aten base names separated by ``|``, with
``?`` for optional and ``*`` for up to three in a row. The rules follow msprof-analyze's advisor
catalogue (``profiler/msprof_analyze/advisor/rules/timeline_fusion_ops.yaml`` in Ascend/mstt: the
"aten" fusion patterns and the "Optimizer" section), kept where they apply to PyTorch code and
torch_npu ships the fused op. Left out: mindspeed-only ops (npu_matmul_add, the MoE token permutes),
``clip_grad_norm_fused_`` (a method of torch_npu's own fused optimizers), ``mul-mul-add`` -> ``torch.addmm``
(no fused op behind it), ``npu_scaled_masked_softmax`` (its softmax-mask sequence is inside the attention
rule) and ``npu_group_norm_silu`` (the simulated NPU has no CPU reference to prove the replacement with).

``op`` names the torch_npu op (``npu::`` custom op, or an aten overload torch_npu implements) whose
first release :func:`available_from` reads from the generated op tables (``ascend_compat.data``).
``tests/perf/test_fusion.py`` proves each ``replacement`` on the simulated NPU: run on the same
inputs, it matches the hand-written form (within ``tolerance`` where the fused op approximates).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional, Tuple

__all__ = ["FusionRule", "RULES", "FUSED_OPTIMIZERS", "FusedOptimizer", "available_from", "by_id"]

#: ops the chain walker passes through (they move or relabel data, or cast it)
PASS_THROUGH = frozenset({"view", "_unsafe_view", "reshape", "expand", "clone", "contiguous", "_to_copy", "alias",
                          "detach", "t", "transpose", "permute", "unsqueeze", "squeeze", "slice", "select",
                          "as_strided", "split", "chunk", "unbind", "split_with_sizes"})


@dataclass(frozen=True)
class FusionRule:
    """A fused op and the hand-written form it replaces (see the module docstring).

    ``anchor``: index in the chain of the op whose line the finding is reported at.
    ``tolerance``: max abs difference the replacement may show against the hand-written form in
    float32 (0 for the same math; the fast GELU approximates). ``direct``: each op must consume the
    previous one's output itself, with nothing passed through in between.
    """

    id: str
    what: str
    chains: Tuple[Tuple[str, ...], ...]
    replacement: str
    op: str
    severity: str
    anchor: int = 0
    tolerance: float = 0.0
    caveat: str = ""
    direct: bool = False


RULES: Tuple[FusionRule, ...] = (
    FusionRule(
        "fused-attention", "hand-written attention (matmul, scale, mask, softmax, dropout, matmul)",
        (("bmm|mm|baddbmm", "mul|div*", "masked_fill|add|where*", "_softmax", "native_dropout?", "bmm|mm"),),
        "torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, is_causal=causal), "
        "which torch_npu runs as its fused attention kernel, or torch_npu.npu_fusion_attention(q, k, v, head_num, "
        "'BNSD', atten_mask=mask_of_positions_to_drop, scale=1 / math.sqrt(head_dim), keep_prob=1 - p)[0]",
        "npu_fusion_attention", "medium"),
    FusionRule(
        "fused-rms-norm", "hand-written RMSNorm (pow, mean, add, rsqrt, mul)",
        (("pow|mul", "mean", "add", "rsqrt", "mul"), ("pow|mul", "mean", "add", "sqrt", "div|reciprocal")),
        "torch_npu.npu_rms_norm(x, weight, epsilon=eps)[0]", "npu_rms_norm", "medium", anchor=3),
    FusionRule(
        "fused-rotary", "hand-written rotary embedding (rotate_half: neg, cat; then mul, add)",
        (("neg", "cat", "mul", "add"),),
        "torch_npu.npu_rotary_mul(x, cos, sin) (4-D x, cos and sin broadcast to it, rotate_half convention)",
        "npu_rotary_mul", "medium", anchor=3),
    FusionRule(
        "fused-swiglu", "hand-written SwiGLU (silu of one half times the other)",
        (("silu", "mul"), ("sigmoid", "mul", "mul")),
        "torch_npu.npu_swiglu(x, dim=-1) on the tensor whose halves are the gate and the value (silu of the first "
        "half times the second); for silu(w1(x)) * w3(x), concatenate w1 and w3 into one Linear",
        "npu_swiglu", "medium"),
    FusionRule(
        "fused-geglu", "hand-written GeGLU (gelu of one half times the other)",
        (("gelu", "mul"),),
        "torch_npu.npu_geglu(x, dim=-1, approximate=1, activate_left=True)[0] (gelu of the first half, tanh "
        "formula; approximate=0 for the exact gelu) on the tensor whose halves are the gate and the value",
        "npu_geglu", "medium"),
    FusionRule(
        "fused-gelu", "GELU written out with tanh (pow, mul, add, mul, tanh)",
        (("pow", "mul", "add", "mul", "tanh"),),
        "torch.nn.functional.gelu(x, approximate='tanh') (one kernel, the same formula), or torch_npu.npu_fast_gelu(x)",
        "npu_fast_gelu", "medium", anchor=4),
    FusionRule(
        "fast-gelu", "GELU",
        (("gelu",),),
        "torch_npu.npu_fast_gelu(x), faster where the accuracy allows",
        "npu_fast_gelu", "low", tolerance=0.03,
        caveat="npu_fast_gelu computes x * sigmoid(1.702 x), which differs from GELU by up to 0.02"),
    FusionRule(
        "fused-add-layer-norm", "a residual add followed by LayerNorm",
        (("add", "native_layer_norm"),),
        "torch.ops.npu.npu_add_layer_norm(x1, x2, weight, bias, eps) (outputs: normalised, mean, rstd, x1 + x2)",
        "npu_add_layer_norm", "low"),
    FusionRule(
        "fused-confusion-transpose", "transpose, contiguous copy and view",
        (("transpose|permute", "clone", "view|_unsafe_view|reshape"),),
        "torch_npu.npu_confusion_transpose(x, perm, shape, transpose_first=True)",
        "npu_confusion_transpose", "low", anchor=1, direct=True),
)


def by_id(rule_id: str) -> FusionRule:
    return next(r for r in RULES if r.id == rule_id)


@dataclass(frozen=True)
class FusedOptimizer:
    """An optimizer class with a fused form on torch_npu: ``fused_op`` (the aten overload torch_npu
    implements for ``fused=True``, or None when torch has no fused form) and torch_npu's own class."""

    name: str
    fused_op: Optional[str]
    npu_class: str


#: msprof-analyze's optimizer catalogue, with torch's own fused forms where torch_npu implements them
FUSED_OPTIMIZERS: Tuple[FusedOptimizer, ...] = (
    FusedOptimizer("AdamW", "_fused_adamw_", "torch_npu.optim.NpuFusedAdamW"),
    FusedOptimizer("Adam", "_fused_adam_", "torch_npu.optim.NpuFusedAdam"),
    FusedOptimizer("SGD", "_fused_sgd_", "torch_npu.optim.NpuFusedSGD"),
    FusedOptimizer("RMSprop", None, "torch_npu.optim.NpuFusedRMSprop"),
    FusedOptimizer("Adadelta", None, "torch_npu.optim.NpuFusedAdadelta"),
)


@functools.lru_cache(maxsize=None)
def available_from(op: str) -> Optional[str]:
    """The first torch_npu release (of those with op tables) that has ``op``: a custom ``npu`` op
    (``"npu_rms_norm"``) or an aten overload torch_npu implements (``"_fused_adam_"``); None if none."""
    from ascend_compat import data

    for version in data.native_op_versions():
        if op in data.custom_ops(version) or op in data.native_ops(version):
            return version
    return None
