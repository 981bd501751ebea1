"""The shim's ``torch.cuda`` name table: the records of :mod:`ascend_compat.knowledge.cuda_names`.

check reads the same records (``analysis/rules/cuda_api.py``), so both give one answer per name.
"""
from __future__ import annotations

from ascend_compat.knowledge.cuda_names import (  # noqa: F401  (re-exported for the shim)
    CUDA_NAMES, EMULATE, KEEP, MAP, PRIVATE, RECORDS, UNSUPPORTED, docs_table, status,
)
