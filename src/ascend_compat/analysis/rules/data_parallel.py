"""Rule ``data-parallel``: nn.DataParallel."""
from __future__ import annotations

from ascend_compat.analysis.rules.base import PARTIAL, Rule

RULE = Rule('data-parallel', 'distributed', PARTIAL, 'nn.DataParallel',
            'DataParallel replicates the module over the visible devices from one process; it runs on NPU'
            ' devices, but torch_npu does not support it officially and it is slower than DDP.',
            'use DistributedDataParallel with backend="hccl" (torchrun).', order=18)
TRIGGERS = ("dataparallel", "data_parallel")
NAMES = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel",
                   "torch.nn.parallel.data_parallel.DataParallel", "torch.nn.parallel.data_parallel.data_parallel"})


def qualname(q: str, version):
    return (RULE.id, RULE.handling, RULE.explanation, RULE.suggestion) if q in NAMES else None
