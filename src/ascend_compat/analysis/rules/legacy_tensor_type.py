"""Rule ``legacy-tensor-type``: legacy torch.cuda.*Tensor type."""
from __future__ import annotations

from ascend_compat.analysis.rules import cuda_api
from ascend_compat.analysis.rules.base import AUTO, Rule, const_str

RULE = Rule('legacy-tensor-type', 'device', AUTO, 'legacy torch.cuda.*Tensor type',
            "torch.cuda.FloatTensor-style constructors and .type('torch.cuda.*Tensor') are mapped by the "
            'shim to torch.npu.*Tensor.',
            'use torch.empty with dtype and device="npu", or torch.npu.FloatTensor.', order=6)
TRIGGERS = ("cuda",)


def on_call(v, node, q, attr) -> None:
    """``x.type("torch.cuda.FloatTensor")`` (the double type is a float64 finding)."""
    if attr != "type" or not node.args or (q and v.classify(q)):
        return
    s = const_str(node.args[0])
    if s is None or not (s.startswith("torch.cuda.") and s.endswith("Tensor")):
        return
    if s == "torch.cuda.DoubleTensor":
        v.report(node, "float64", f'.type("{s}"): float64 on the NPU', 'use .to("npu", torch.float32).')
    else:
        v.report(node, RULE.id, f'.type("{s}")', f'use .type("{s.replace("cuda", "npu")}") or .to(device, dtype).')


def rewrite_qualname(dotted: str, version):
    return cuda_api.npu_chain(dotted, version)
