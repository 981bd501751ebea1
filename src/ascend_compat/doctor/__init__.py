"""Environment diagnosis: ``run_doctor`` runs the checks of :mod:`.checks` against an
:class:`Environment` (driver, firmware, CANN, torch/torch_npu versions, devices).

Error codes and log scanning live in :mod:`ascend_compat.errors`, operator coverage in
:mod:`ascend_compat.coverage`; their public names (``explain``, ``scan_text``, ``read_log``,
``FallbackMonitor``, ``audit_model``) are re-exported here, where users first met them.
Everything is imported lazily so ``import ascend_compat.doctor`` stays cheap.
"""
from __future__ import annotations

from ascend_compat._lazy import lazy_exports

_EXPORTS = {
    "Check": "ascend_compat.doctor.environment",
    "Status": "ascend_compat.doctor.environment",
    "Environment": "ascend_compat.doctor.environment",
    "run_doctor": "ascend_compat.doctor.checks",
    "CHECKS": "ascend_compat.doctor.checks",
    "explain": "ascend_compat.errors.explain",
    "Explained": "ascend_compat.errors.explain",
    "scan_text": "ascend_compat.errors.logscan",
    "read_log": "ascend_compat.errors.logscan",
    "LogReadError": "ascend_compat.errors.logscan",
    "FallbackMonitor": "ascend_compat.coverage.fallback",
    "audit_model": "ascend_compat.coverage.audit",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
