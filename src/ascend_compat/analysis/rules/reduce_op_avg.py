"""Rule ``reduce-op-avg``: ReduceOp.AVG."""
from __future__ import annotations

from ascend_compat.analysis.rules.base import PARTIAL, Rule

RULE = Rule('reduce-op-avg', 'distributed', PARTIAL, 'ReduceOp.AVG',
            'HCCL itself implements only SUM/PROD/MAX/MIN: current torch_npu (and the simulator) runs AVG'
            " as SUM followed by a division, so results can differ in the last bits from NCCL's AVG; "
            'older torch_npu releases reject ReduceOp.AVG.',
            'use ReduceOp.SUM and divide by dist.get_world_size() for portability across torch_npu '
            'versions.', order=17)
TRIGGERS = ("reduceop",)
#: a name bound to the class (``R = dist.ReduceOp``) is followed: ``R.AVG`` holds no trigger word
FOLLOWED_MEMBERS = ("ReduceOp",)


def qualname(q: str, version):
    if q.startswith("torch.distributed") and q.endswith("ReduceOp.AVG"):
        return RULE.id, RULE.handling, "ReduceOp.AVG: " + RULE.explanation, RULE.suggestion
    return None
