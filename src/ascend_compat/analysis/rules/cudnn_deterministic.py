"""Rule ``cudnn-deterministic``: cudnn.deterministic."""
from __future__ import annotations

from ascend_compat.analysis.rules.base import PARTIAL, Rule

RULE = Rule('cudnn-deterministic', 'backend-flags', PARTIAL, 'cudnn.deterministic',
            'Accepted but does not make NPU kernels deterministic.',
            'use torch.use_deterministic_algorithms(True) (honoured by torch_npu).', order=13)
TRIGGERS = ("cudnn",)
