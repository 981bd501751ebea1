"""Diagnostics: environment checks (``run_doctor``), error-code explanations (``explain``, ``scan_text``).

Everything is imported lazily so ``import ascend_compat.doctor`` stays cheap. ``FallbackMonitor``
(``doctor/fallback.py``) and ``audit_model`` (``doctor/audit.py``) are exported the same way when
their modules exist.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "Check": "ascend_compat.doctor.environment",
    "Status": "ascend_compat.doctor.environment",
    "Environment": "ascend_compat.doctor.environment",
    "run_doctor": "ascend_compat.doctor.checks",
    "CHECKS": "ascend_compat.doctor.checks",
    "explain": "ascend_compat.doctor.errors",
    "Explained": "ascend_compat.doctor.errors",
    "scan_text": "ascend_compat.doctor.logscan",
    "read_log": "ascend_compat.doctor.logscan",
    "LogReadError": "ascend_compat.doctor.logscan",
    "FallbackMonitor": "ascend_compat.doctor.fallback",
    "audit_model": "ascend_compat.doctor.audit",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ascend_compat.doctor' has no attribute {name!r}")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:  # fallback.py / audit.py not written yet
            raise AttributeError(f"ascend_compat.doctor.{name} is not available: {module} is missing") from None
        raise
    value = getattr(mod, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
