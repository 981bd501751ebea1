"""The wording torch_npu gives its errors, written (by the simulated NPU) and read (by the log diagnosis) here.

* The error-code suffix (``formatErrorCode`` in ``NPUException.cpp`` / ``torch_npu/utils/_error_code.py``):
  ``[ERROR] <yyyy-mm-dd-hh:mm:ss> (PID:<pid>, Device:<device>, RankID:<rank>) ERR<ss><ttt> <SUB> <meaning>``.
* A failed ACL call (``NPU_CHECK_ERROR`` in ``NPUException.h``, non-compact form):
  ``<func>:<file>:<line> NPU function error: <call>, error code is <code><suffix>`` then
  ``[Error]: <torch_npu's text for the code>`` (``NPUErrorCodes.h``) and the CANN error message.
* A failed HCCL call (``HCCL_CHECK_ERROR`` in ``HCCLUtils.hpp``):
  ``<func>:<file>:<line> HCCL function error: <call>, error code is <code> <suffix>.`` then the CANN message.
"""
from __future__ import annotations

import re
import time
from typing import Optional

#: ``[ERROR] 2026-11-21-02:41:07 (PID:90311, Device:3, RankID:3) ERR02200 DIST call hccl api failed``
SUFFIX = re.compile(r"\[ERROR\] (\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d) \(PID:(\d+), Device:(-?\d+), RankID:(-?\d+)\) "
                    r"(ERR\d{5})")

#: torch_npu's ``[Error]:`` texts (``NPUErrorCodes.h``) for the runtime codes a rehearsal produces
ACL_TEXTS = {
    507015: "The aicore execution is abnormal.",
    507035: "The vector core execution is abnormal.",
    507048: "The execution of the internal task times out.",
}
_RECTIFY = "Rectify the fault based on the error information in the ascend log."


def suffix(pid: int, device: int, rank: int, err: str, sub: str, meaning: str, when: Optional[float] = None) -> str:
    """The suffix line (without its leading newline)."""
    stamp = time.strftime("%Y-%m-%d-%H:%M:%S", time.localtime(time.time() if when is None else when))
    return f"[ERROR] {stamp} (PID:{pid}, Device:{device}, RankID:{rank}) {err} {sub} {meaning}"


def npu_function_error(where: str, call: str, code: int, suffix_text: str, cann_message: str = "") -> str:
    """``NPU_CHECK_ERROR``'s message: ``where`` is ``func:file:line``; ``suffix_text`` starts with a newline
    (empty under TORCH_NPU_COMPACT_ERROR_OUTPUT)."""
    text = ACL_TEXTS.get(code)
    head = f"{where} NPU function error: {call}, error code is {code}{suffix_text}"
    head += f"\n[Error]: {text} \n        {_RECTIFY}" if text else "."
    return head + ("\n" + cann_message if cann_message else "")


def hccl_function_error(where: str, call: str, code: int, suffix_text: str, cann_message: str = "") -> str:
    """``HCCL_CHECK_ERROR``'s message (``suffix_text`` as for :func:`npu_function_error`)."""
    return f"{where} HCCL function error: {call}, error code is {code} {suffix_text}.\n{cann_message}".rstrip("\n")


def parse_suffix(line: str):
    """``(time, pid, device, rank, ERRxxxxx)`` of the first suffix in ``line``, or None."""
    m = SUFFIX.search(line)
    if m is None:
        return None
    try:
        when = time.mktime(time.strptime(m.group(1), "%Y-%m-%d-%H:%M:%S"))
    except ValueError:
        return None
    return when, int(m.group(2)), int(m.group(3)), int(m.group(4)), m.group(5)
