"""Rule ``cuda-env``: CUDA environment variable."""
from __future__ import annotations

import functools

from ascend_compat.knowledge import env_vars
from ascend_compat.analysis.rules.base import AUTO, Rule

#: the knowledge record of a name (cached: looked up for every import / key string)
_lookup = functools.lru_cache(maxsize=4096)(env_vars.lookup)

RULE = Rule('cuda-env', 'environment', AUTO, 'CUDA environment variable',
            'The shim maps CUDA_VISIBLE_DEVICES to ASCEND_RT_VISIBLE_DEVICES (validated, sorted) and '
            'PYTORCH_CUDA_ALLOC_CONF to PYTORCH_NPU_ALLOC_CONF before the backend starts.',
            'set ASCEND_RT_VISIBLE_DEVICES / PYTORCH_NPU_ALLOC_CONF.', order=19)
#: the names of the knowledge records this rule reports (a trailing * makes a prefix)
TRIGGERS = tuple(sorted({r.name.rstrip("*").lower() for r in env_vars.RECORDS if r.rule == 'cuda-env'}))
#: the variables migrate renames (the shim's own translations, made explicit)
ENV_RENAMES = env_vars.RENAMES
REWRITE_NEEDS_TORCH_NPU = False


STRING_ROLES = ("key", "compare", "env")


def on_string(v, node, s: str, role: str) -> None:
    """An environment variable name used as one: a key, a compared name, a getter's argument.

    Every environment rule (cuda-env, nccl-env, cuda-env-other) is reported here: the record in
    :mod:`ascend_compat.knowledge.env_vars` names the rule and its verdict."""
    if role == "value":
        return
    rec = _lookup(s)
    if rec is not None:
        v.report(node, rec.rule, f"environment variable {s}: {rec.reason}", rec.advice, handling=rec.verdict)


def rewrite_string(body: str):
    return ENV_RENAMES.get(body)
