"""torch_npu's error-message suffix (``ERRxxyyy``), reproduced so simulated errors read like real ones.

torch_npu appends ``"\\n[ERROR] <time> (PID:<pid>, Device:<dev>, RankID:<rank>) ERR<sub><code> <SUB> <meaning>"``
to most Python-side errors unless ``TORCH_NPU_COMPACT_ERROR_OUTPUT=1`` (or an interactive prompt) is in
effect. The sub-module ids and codes below are the ones torch_npu 2.x uses (``torch_npu/utils/_error_code.py``).
"""
from __future__ import annotations

import os
import sys
import time

# name -> (number, meaning); facts from torch_npu's ErrCode enum
CODES = {
    "PARAM": (1, "invalid parameter"),
    "TYPE": (2, "invalid type"),
    "VALUE": (3, "invalid value"),
    "INTERNAL": (5, "internal error"),
    "MEMORY": (6, "memory error"),
    "NOT_SUPPORT": (7, "feature not supported"),
    "NOT_FOUND": (8, "resource not found"),
    "UNAVAIL": (9, "resource unavailable"),
}


def _interactive() -> bool:
    return bool(getattr(sys, "ps1", None)) or bool(sys.flags.interactive)


def pta_error(code: str) -> str:
    """The suffix torch_npu's ``pta_error(ErrCode.<code>)`` appends (empty in compact mode)."""
    if os.environ.get("TORCH_NPU_COMPACT_ERROR_OUTPUT", "0") not in ("", "0") or _interactive():
        return ""
    number, meaning = CODES[code]
    from ascend_compat.simulator import _state

    try:
        dev = int(_state.current_device())
    except Exception:  # pragma: no cover - never let the suffix itself fail
        dev = -1
    rank = -1
    if "torch.distributed" in sys.modules:
        try:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                rank = dist.get_rank()
        except Exception:
            rank = -1
    stamp = time.strftime("%Y-%m-%d-%H:%M:%S", time.localtime())
    return f"\n[ERROR] {stamp} (PID:{os.getpid()}, Device:{dev}, RankID:{rank}) ERR00{number:03d} PTA {meaning}"


class SimulatorUnsupportedError(RuntimeError):
    """Raised by a ``torch.npu`` API that the simulated NPU cannot honour; the message says why."""


def unsupported(api: str, why: str) -> SimulatorUnsupportedError:
    """Build the error for ``torch.npu.<api>`` with the reason and the usual torch_npu suffix."""
    return SimulatorUnsupportedError(
        f"torch.npu.{api} is not supported by the ascend-compat simulated NPU: {why}"
        + pta_error("NOT_SUPPORT")
    )
