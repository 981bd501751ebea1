"""Operator coverage on the NPU: which ops run natively and which fall back to the CPU.

* :class:`FallbackMonitor` (:mod:`.fallback`) - counts the CPU fallbacks of a running region;
* :func:`audit_model` (:mod:`.audit`) - routes every op of a model's forward/backward as the
  dispatcher would (native / composite / fallback / float64) for a torch_npu version;
* :mod:`._routing` - the routing decision both share.

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
