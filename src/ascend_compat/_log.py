"""The ``ascend_compat`` logger. Level from ``ASCEND_COMPAT_LOG_LEVEL`` (default WARNING).

ascend-compat never changes the global ``warnings`` filters and never prints a banner; everything
informational goes through this logger.
"""
from __future__ import annotations

import logging
import os

logger = logging.getLogger("ascend_compat")


LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _configure() -> None:
    raw = os.environ.get("ASCEND_COMPAT_LOG_LEVEL", "")
    level = raw.strip().upper()
    if not level:
        return
    if level not in LEVELS:
        from ascend_compat import _config

        _config.warn_invalid("ASCEND_COMPAT_LOG_LEVEL", raw, "expected one of " + ", ".join(LEVELS), "using WARNING")
        level = "WARNING"
    logger.setLevel(getattr(logging, level))
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[ascend-compat %(levelname)s] %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False


_configure()


def get_logger(name: str | None = None) -> logging.Logger:
    """The package logger, or a child of it (``ascend_compat.<name>``)."""
    return logger.getChild(name) if name else logger
