"""CANN and torch_npu error codes: look a code up (``explain``), scan a log for them (``scan_text``,
``read_log``).

* :mod:`.codes` - the generated code table (``data/error_codes.json``) and code families;
* :mod:`.explanations` - the advice texts written for this project;
* :mod:`.explain` - one code or message -> :class:`Explained`;
* :mod:`.logscan` - every code and known failure pattern in a log.

Imported lazily: ``import ascend_compat.errors`` loads nothing else.
"""
from __future__ import annotations

from ascend_compat._lazy import lazy_exports

_EXPORTS = {
    "explain": "ascend_compat.errors.explain",
    "Explained": "ascend_compat.errors.explain",
    "scan_text": "ascend_compat.errors.logscan",
    "read_log": "ascend_compat.errors.logscan",
    "LogReadError": "ascend_compat.errors.logscan",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
