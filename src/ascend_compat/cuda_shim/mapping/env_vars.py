"""The shim's environment-variable tables, derived from :mod:`ascend_compat.knowledge.env_vars`.

``ENV_MAP``: CUDA-side name -> (Ascend name, converter name or None), for the variables the shim
translates. ``NO_EQUIVALENT``: CUDA-side name prefix -> reason, for variables it leaves alone and
names once in the log (longest prefixes first, so the most specific reason wins).
"""
from __future__ import annotations

from ascend_compat.knowledge.alloc_conf import ALL_KEYS
from ascend_compat.knowledge.env_vars import RECORDS

ENV_MAP: dict[str, tuple[str, str | None]] = {
    r.name: (r.ascend, r.converter) for r in RECORDS if r.shim_maps and r.ascend
}

NO_EQUIVALENT: dict[str, str] = {
    r.name.rstrip("*"): (f"{r.reason}; {r.advice.rstrip('.')}" if r.ascend else r.reason)
    for r in sorted(RECORDS, key=lambda r: -len(r.name))
    if not r.shim_maps and r.rule in ("nccl-env", "cuda-env-other")
}

#: keys of PYTORCH_CUDA_ALLOC_CONF that the NPU caching allocator understands (some torch_npu version)
NPU_ALLOC_CONF_KEYS = ALL_KEYS
