"""The ``ascend_compat`` logger. Level from ``ASCEND_COMPAT_LOG_LEVEL`` (default WARNING).

ascend-compat never changes the global ``warnings`` filters and never prints a banner; everything
informational goes through this logger.
"""
from __future__ import annotations

import logging
import os

logger = logging.getLogger("ascend_compat")


def _configure() -> None:
    level = os.environ.get("ASCEND_COMPAT_LOG_LEVEL", "").strip().upper()
    if not level:
        return
    logger.setLevel(getattr(logging, level, logging.WARNING))
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[ascend-compat %(levelname)s] %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False


_configure()


def get_logger(name: str | None = None) -> logging.Logger:
    """The package logger, or a child of it (``ascend_compat.<name>``)."""
    return logger.getChild(name) if name else logger
