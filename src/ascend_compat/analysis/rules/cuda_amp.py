"""Rule ``cuda-amp``: CUDA automatic mixed precision."""
from __future__ import annotations

from ascend_compat.analysis.rules import cuda_api
from ascend_compat.analysis.rules.base import AUTO, Rule
from ascend_compat.knowledge import devices

RULE = Rule('cuda-amp', 'amp', AUTO, 'CUDA automatic mixed precision',
            'torch.cuda.amp.autocast/GradScaler/custom_fwd and torch.autocast("cuda") are mapped by the '
            'shim to the NPU autocast and torch.npu.amp.GradScaler.',
            'use torch.npu.amp.autocast and torch.npu.amp.GradScaler, as migrate writes them.', order=9)
TRIGGERS = ("cuda",)
#: calls whose first positional argument is the autocast / GradScaler device type
AMP_FIRST_ARG = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.GradScaler",
                           "torch.amp.autocast_mode.autocast", "torch.amp.grad_scaler.GradScaler",
                           "torch.cpu.amp.autocast"})


def on_call(v, node, q, attr) -> None:
    if q in AMP_FIRST_ARG and node.args:
        v.device_arg(node.args[0], rule=RULE.id)


def rewrite_string(body: str):
    return devices.rewrite_head(body) if body.startswith("cuda") else None


def rewrite_qualname(dotted: str, version):
    """``torch.cuda.amp.autocast`` -> ``torch.npu.amp.autocast`` when torch_npu has it."""
    return cuda_api.npu_chain(dotted, version)
