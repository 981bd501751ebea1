"""Rule ``cuda-graph``: CUDA graphs."""
from __future__ import annotations

from ascend_compat.analysis.rules import cuda_api
from ascend_compat.analysis.rules.base import PARTIAL, Rule

RULE = Rule('cuda-graph', 'graphs', PARTIAL, 'CUDA graphs',
            'CUDAGraph/graph/make_graphed_callables map to torch.npu.NPUGraph, which supports inference '
            'capture only; elsewhere the shim runs eagerly (correct, without the speed-up).',
            'use torch.npu.NPUGraph / torch.npu.graph for inference, or run eagerly.', order=10)
TRIGGERS = ("cuda",)


def qualname(q: str, version):
    if q.startswith("torch.") and "_init_for_cuda_graphs" in q:
        return RULE.id, RULE.handling, f"{q}: CUDA-graph RNG setup; " + RULE.explanation, RULE.suggestion
    return None


def rewrite_qualname(dotted: str, version):
    return cuda_api.npu_chain(dotted, version)
