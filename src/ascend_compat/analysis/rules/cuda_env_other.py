"""Rule ``cuda-env-other``: CUDA-only environment variable."""
from __future__ import annotations

from ascend_compat.knowledge import env_vars
from ascend_compat.analysis.rules.base import PARTIAL, Rule

RULE = Rule('cuda-env-other', 'environment', PARTIAL, 'CUDA-only environment variable',
            'This variable has no effect on NPU.',
            'set the NPU equivalent named in each finding, or remove the variable.', order=20)
#: the names of the knowledge records this rule reports (a trailing * makes a prefix)
TRIGGERS = tuple(sorted({r.name.rstrip("*").lower() for r in env_vars.RECORDS if r.rule == 'cuda-env-other'}))
