"""Rule ``nccl-backend``: NCCL backend."""
from __future__ import annotations

import ast
import re

from ascend_compat.analysis.rules.base import AUTO, Rule, const_str
from ascend_compat.knowledge import backends

RULE = Rule('nccl-backend', 'distributed', AUTO, 'NCCL backend',
            'The shim maps "nccl" to "hccl" in init_process_group/new_group and keeps backend comparisons'
            ' working.',
            'use backend="hccl".', order=15)
TRIGGERS = ("nccl",)
#: a string naming the NCCL backend ("nccl", "cuda:nccl", "cpu:gloo,cuda:nccl"; in any case, as torch.distributed
#: reads backend names: ``backend="NCCL"`` is NCCL)
BACKEND_STR = re.compile(r"(?:[a-z]+:)?nccl(?:,[a-z]+:[a-z]+)*\Z|(?:[a-z]+:[a-z]+,)+cuda:nccl(?:,.*)?\Z", re.I)
#: calls whose first positional argument is a backend
BACKEND_CALLS = backends.BACKEND_CALLS
#: how a comparison finding's message starts (a rewritten comparison needs no import torch_npu)
COMPARED = "distributed backend compared with"


def qualname(q: str, version):
    rec = backends.BY_QUALNAME.get(q)
    if rec is not None:
        return rec.rule, rec.verdict, f"{q}: NCCL is not available on NPU (HCCL is); {rec.reason}", rec.advice
    return None


def on_call(v, node, q, attr) -> None:
    """``init_process_group("nccl")``, ``backend=...``, ``dist_backend=...``."""
    if node.args and (attr in BACKEND_CALLS or (q or "").rsplit(".", 1)[-1] in BACKEND_CALLS):
        v.backend_arg(node.args[0])
    for kw in node.keywords:
        if kw.arg == "backend" or kw.arg == "dist_backend":
            v.backend_arg(kw.value)


def on_compare(v, node, operands) -> None:
    """``backend == "nccl"``, ``dist.get_backend() in ("nccl", ...)``."""
    if any(v.is_backend_expr(o) for o in operands):
        for o in operands:
            for el in (o.elts if type(o) in (ast.Tuple, ast.List, ast.Set) else [o]):
                s = const_str(el)
                if s is not None and BACKEND_STR.match(s):
                    v.report(el, RULE.id, f'{COMPARED} "{s}"',
                             'compare with "hccl" too (or use the shim, which keeps this working).')


def rewrite_string(body: str):
    return backends.rewrite(body) if "nccl" in body else None


def rewrite_needs_torch_npu(finding) -> bool:
    """``init_process_group("hccl")`` needs torch_npu's HCCL backend; a rewritten comparison does not."""
    return not finding.message.startswith(COMPARED)
