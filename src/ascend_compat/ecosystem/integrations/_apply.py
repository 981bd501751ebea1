"""Shared helper for the library integrations (transformers, accelerate, DeepSpeed, Lightning).

Each integration declares its changes as :class:`ascend_compat.cuda_shim.registry.Patch` objects
(deferred until the library's module is imported); :func:`apply_once` hands them to the shim's
registry unless they are already applied or waiting, so ``apply()`` is idempotent and
``ascend_compat.deactivate()`` undoes them with everything else.
"""
from __future__ import annotations

from ascend_compat.cuda_shim import registry

__all__ = ["apply_once", "is_live"]


def is_live(patch) -> bool:
    """True when ``patch`` is applied or waiting for its module's import."""
    return patch in registry.applied() or patch in registry.pending()


def apply_once(patches: list) -> int:
    """Apply the patches that are not live yet; returns how many were applied right now."""
    todo = [p for p in patches if not is_live(p)]
    return registry.apply_all(todo) if todo else 0
