"""torch_npu's own warnings (``TORCH_NPU_WARN``), delivered as torch_npu delivers them.

torch_npu's ``warn_`` (NPUException.cpp) hands a warning to c10's *base* handler, which writes it
to stderr - not to Python's ``warnings`` - and only when ``OptionsManager::ShouldPrintWarning`` says
so: not with ``TORCH_NPU_WARNING_DISABLE=1`` (or the deprecated ``TORCH_NPU_DISABLED_WARNING=1``),
and only on rank 0 or when ``RANK`` is unset (-1). So ``-W error`` and ``pytest.warns`` never see it,
and other ranks print nothing. The CPU-fallback warning and the float64 downcast message go here.
"""
from __future__ import annotations

import os
import sys
import time


def should_print() -> bool:
    """torch_npu's ShouldPrintWarning."""
    disabled = os.environ.get("TORCH_NPU_WARNING_DISABLE")
    if disabled is None:
        disabled = os.environ.get("TORCH_NPU_DISABLED_WARNING")
    if disabled is not None and disabled.strip().lstrip("+-").isdigit() and int(disabled) == 1:
        return False
    return rank_id() in (0, -1)


def rank_id() -> int:
    """torch_npu's ``OptionsManager::GetRankId``: ``strtol(RANK)`` (the number the value starts with after
    blanks, 0 when there is none), -1 when ``RANK`` is unset. The one reader of ``RANK`` in the simulator."""
    import re

    rank = os.environ.get("RANK")
    if rank is None:
        return -1
    match = re.match(r"\s*([+-]?\d+)", rank)
    return int(match.group(1)) if match else 0


def npu_warn(message: str, function: str, where: str) -> None:
    """Write ``message`` as c10's base warning handler does: ``[W<date> <time> <pid> <file:line>]
    Warning: <message> (function <function>)``."""
    if not should_print():
        return
    now = time.time()
    stamp = time.strftime("%m%d %H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1e6):06d}"
    sys.stderr.write(f"[W{stamp} {os.getpid()} {where}] Warning: {message} (function {function})\n")
    sys.stderr.flush()
