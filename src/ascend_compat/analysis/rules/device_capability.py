"""Rule ``device-capability``: CUDA compute capability / device properties."""
from __future__ import annotations

from ascend_compat.analysis.rules.base import PARTIAL, Rule

RULE = Rule('device-capability', 'api', PARTIAL, 'CUDA compute capability / device properties',
            "NPUs have no CUDA compute capability: torch_npu's get_device_capability() returns None "
            'unless TORCH_NPU_DEVICE_CAPABILITY is set; the shim returns a configurable value. Code that '
            'selects kernels by capability (>= (8, 0) for bf16/flash) picks a path by a made-up number.',
            'test for the feature instead, with torch.npu.is_bf16_supported() or torch.npu.get_device_name().', order=8)
TRIGGERS = ("cuda",)
