"""CANN and torch_npu error codes: look a code up (``explain``), scan a log for them (``scan_text``,
``read_log``).

* :mod:`.codes` - the generated code table (``data/error_codes.json``) and code families;
* :mod:`.explanations` - the advice texts written for this project;
* :mod:`.explain` - one code or message -> :class:`Explained`;
* :mod:`.logscan` - every code and known failure pattern in a log.

Imported lazily: ``import ascend_compat.errors`` loads nothing else.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "explain": "ascend_compat.errors.explain",
    "Explained": "ascend_compat.errors.explain",
    "scan_text": "ascend_compat.errors.logscan",
    "read_log": "ascend_compat.errors.logscan",
    "LogReadError": "ascend_compat.errors.logscan",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ascend_compat.errors' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
