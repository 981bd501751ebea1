"""Shared helper for the library integrations (transformers, accelerate, DeepSpeed, Lightning).

Each integration declares its changes as :class:`ascend_compat.cuda_shim.registry.Patch` objects
(deferred until the library's module is imported); :func:`apply_once` hands them to the shim's
registry unless they are already applied or waiting, so ``apply()`` is idempotent and
``ascend_compat.deactivate()`` undoes them with everything else.
"""
from __future__ import annotations

__all__ = ["all_patches", "apply_once", "is_live"]


def is_live(patch) -> bool:
    """True when ``patch`` is applied or waiting for its module's import."""
    from ascend_compat.cuda_shim import registry

    return patch in registry.applied() or patch in registry.pending()


def apply_once(patches: list) -> int:
    """Apply the patches that are not live yet; returns how many were applied right now."""
    from ascend_compat.cuda_shim import registry

    todo = [p for p in patches if not is_live(p)]
    return registry.apply_all(todo) if todo else 0


def all_patches(only=None) -> list:
    """The transformers, accelerate, DeepSpeed and Lightning patches not yet applied or waiting
    (all four libraries, or those named in ``only``: ``"transformers"``, ``"accelerate"``,
    ``"deepspeed"``, ``"lightning"``).

    For the shim to include in its declared changes at activation (each waits for its library's
    import, so nothing is imported here); safe after a manual ``<integration>.apply()``.
    """
    from ascend_compat.ecosystem import accelerate_patch, deepspeed_patch, lightning, transformers_patch

    modules = {"transformers": transformers_patch, "accelerate": accelerate_patch,
               "deepspeed": deepspeed_patch, "lightning": lightning}
    out = []
    for name, module in modules.items():
        if only is None or name in only:
            out.extend(p for p in module.patches() if not is_live(p))
    return out
