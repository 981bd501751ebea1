"""Rule ``nvidia-smi``: nvidia-smi invocation."""
from __future__ import annotations

import ast

from ascend_compat.analysis.rules.base import MANUAL, Rule, const_str

RULE = Rule('nvidia-smi', 'environment', MANUAL, 'nvidia-smi invocation',
            'nvidia-smi does not exist on Ascend hosts; parsing its output fails.',
            'use npu-smi info, or torch.npu.mem_get_info()/device_count() from Python.', order=21)
TRIGGERS = ("nvidia",)


def on_call(v, node, q, attr) -> None:
    """``subprocess.run(["nvidia-smi", ...])``, ``os.system("nvidia-smi ...")``."""
    if not node.args or not q or not (q.startswith("subprocess.") or q in ("os.system", "os.popen")):
        return
    first = node.args[0]
    for el in (first.elts if type(first) in (ast.List, ast.Tuple) else [first])[:1]:
        s = const_str(el)
        if s is not None and s.lstrip().startswith("nvidia-smi"):
            v.report(el, RULE.id, "runs nvidia-smi: " + RULE.explanation, RULE.suggestion)
