"""CUDA-only third-party libraries as check sees them: a reader of :mod:`ascend_compat.knowledge.libraries`.

Importing any listed library is reported once per import statement (rule ``cuda-library``) with the
record's verdict and advice; migrate rewrites only ``flash_attn`` imports (to the drop-in).
"""
from __future__ import annotations

from typing import Optional

from ascend_compat.knowledge import libraries as _knowledge
from ascend_compat.knowledge.records import MANUAL, Library

TOP_LEVEL_NAMES = _knowledge.TOP_LEVEL_NAMES


def lookup(module: str) -> Optional[tuple[str, Library]]:
    """(key, record) for an imported module name (longest dotted prefix), or None."""
    rec = _knowledge.lookup(module)
    return None if rec is None else (rec.name, rec)


def message(key: str, lib: Library) -> str:
    """The finding message for a use of ``key``."""
    if lib.verdict == MANUAL:
        return f"{key}: {lib.what} (no Ascend build)"
    if lib.dropin:
        return f"{key}: {lib.what} (ascend-compat drop-in under the shim)"
    return f"{key}: {lib.what} (runs on Ascend with limits)"
