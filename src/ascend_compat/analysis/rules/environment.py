"""CUDA / NCCL environment variables as check sees them: a reader of :mod:`ascend_compat.knowledge.env_vars`."""
from __future__ import annotations

from ascend_compat.knowledge.env_vars import lookup

__all__ = ["lookup"]
