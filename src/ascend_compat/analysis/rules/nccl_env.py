"""Rule ``nccl-env``: NCCL_* environment variable."""
from __future__ import annotations

from ascend_compat.analysis.rules import cuda_env
from ascend_compat.knowledge import env_vars
from ascend_compat.analysis.rules.base import PARTIAL, Rule

RULE = Rule('nccl-env', 'distributed', PARTIAL, 'NCCL_* environment variable',
            'NCCL variables have no effect on HCCL; the shim maps the ones with an HCCL equivalent (e.g. '
            'NCCL_SOCKET_IFNAME -> HCCL_SOCKET_IFNAME) and warns about the rest.',
            'set the HCCL_* equivalent, such as HCCL_SOCKET_IFNAME, HCCL_CONNECT_TIMEOUT or HCCL_BUFFSIZE.', order=16)
#: the names of the knowledge records this rule reports (a trailing * makes a prefix)
TRIGGERS = tuple(sorted({r.name.rstrip("*").lower() for r in env_vars.RECORDS if r.rule == 'nccl-env'}))
#: the NCCL variables the shim translates unchanged are renamed by migrate (knowledge.env_vars.RENAMES)
rewrite_string = cuda_env.rewrite_string
REWRITE_NEEDS_TORCH_NPU = False
