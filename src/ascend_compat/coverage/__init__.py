"""Operator coverage on the NPU: which ops run natively and which fall back to the CPU.

* :class:`FallbackMonitor` (:mod:`.fallback`) - counts the CPU fallbacks of a running region;
* :func:`audit_model` (:mod:`.audit`) - routes every op of a model's forward/backward as the
  dispatcher would (native / composite / fallback / refused dtype) for a torch_npu version.

Both are op observers (:mod:`ascend_compat.observe`, which holds the routing rule); the facts they
report (rewrites, refused dtypes) come from :mod:`ascend_compat.knowledge.operators`.

Also exported from :mod:`ascend_compat.doctor` (their original, documented home). Imported lazily.
"""
from __future__ import annotations

from ascend_compat._lazy import lazy_exports

_EXPORTS = {
    "FallbackMonitor": "ascend_compat.coverage.fallback",
    "audit_model": "ascend_compat.coverage.audit",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
