"""Drop-in modules: ``flash_attn``, ``apex``, ``xformers`` and ``bitsandbytes`` implemented on the NPU.

The implementations are this package's members (``ascend_compat.ecosystem.dropins.flash_attn`` ...,
importable directly); :mod:`._finder` serves them under the real packages' names while the shim is
active and the real package is not installed. :func:`changes` is this package's patch list, which
activation hands to the shim.
"""
from __future__ import annotations

NAMES = ("flash_attn", "apex", "xformers", "bitsandbytes")


def changes(only=None) -> list:
    """The change that installs the drop-ins (all four, or those named in ``only``); [] if none."""
    from ascend_compat.ecosystem.dropins import _finder

    return _finder.changes(only=only)
