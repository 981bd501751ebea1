"""Errors of the simulated ``torch.npu`` API: :class:`SimulatorUnsupportedError` and :func:`unsupported`.

The torch_npu suffix (``pta_error``) comes from the device core's
:mod:`ascend_compat.simulator._error_code`, the one builder of torch_npu's error codes.
"""
from __future__ import annotations

from ascend_compat.simulator._error_code import pta_error

__all__ = ["SimulatorUnsupportedError", "unsupported", "pta_error"]


class SimulatorUnsupportedError(RuntimeError):
    """Raised by a ``torch.npu`` API that the simulated NPU cannot honour; the message says why."""


def unsupported(api: str, why: str) -> SimulatorUnsupportedError:
    """Build the error for ``torch.npu.<api>`` with the reason and the usual torch_npu suffix."""
    return SimulatorUnsupportedError(
        f"torch.npu.{api} is not supported by the ascend-compat simulated NPU: {why}"
        + pta_error("NOT_SUPPORT")
    )
