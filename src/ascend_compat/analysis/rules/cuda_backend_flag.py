"""Rule ``cuda-backend-flag``: torch.backends.cuda setting."""
from __future__ import annotations

from ascend_compat.analysis.rules.base import AUTO, Rule

RULE = Rule('cuda-backend-flag', 'backend-flags', AUTO, 'torch.backends.cuda setting',
            'matmul.allow_tf32 maps to torch.npu.matmul.allow_hf32 under the shim; SDPA kernel selection '
            'contexts are accepted (the NPU picks its own attention kernel).',
            'use torch.npu.matmul.allow_hf32, and drop sdp_kernel selection.', order=14)
TRIGGERS = ("cuda",)
NOTES = {
    "matmul.allow_tf32": "maps to HF32 matmuls (torch.npu.matmul.allow_hf32) under the shim",
    "matmul.allow_fp16_reduced_precision_reduction": "accepted; NPU matmul precision is set by its own switches",
    "sdp_kernel": "SDPA kernel selection is accepted; the NPU picks its own fused attention kernel",
    "enable_": "SDPA kernel switches are accepted; the NPU picks its own fused attention kernel",
    "is_built": "False on NPU builds",
}
HF32 = {"torch.backends.cuda.matmul.allow_tf32": "torch.npu.matmul.allow_hf32"}


def qualname(q: str, version):
    if not (q.startswith("torch.backends.cuda.") or q == "torch.backends.cuda"):
        return None
    rest = q[len("torch.backends.cuda."):]
    why = next((n for k, n in NOTES.items() if rest.startswith(k)),
               "CUDA backend switch; accepted by the shim, no effect on NPU")
    return RULE.id, RULE.handling, f"{q}: {why}", RULE.suggestion


def rewrite_qualname(dotted: str, version):
    """TF32 for matmuls -> HF32."""
    return HF32.get(dotted)
