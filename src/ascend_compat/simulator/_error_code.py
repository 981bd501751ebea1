"""torch_npu's error-code suffix, the one builder every simulated error uses.

torch_npu appends ``"\\n[ERROR] <time> (PID:<pid>, Device:<dev>, RankID:<rank>) ERR<ss><ccc> <SUB> <meaning>"``
to its errors (``ERR01002 OPS invalid type``). It builds that line in two places, which differ slightly:

* C++ (``formatErrorCode`` in ``NPUException.cpp``, behind ``PTA_ERROR``/``OPS_ERROR``/...): rank from the
  ``RANK`` environment variable, empty when ``TORCH_NPU_COMPACT_ERROR_OUTPUT`` is non-zero -> :func:`cpp_error`;
* Python (``torch_npu/utils/_error_code.py``: ``pta_error``, ``ops_error``, ...): rank from
  ``torch.distributed.get_rank()`` (-1 when not initialised), also empty at an interactive prompt
  -> :func:`pta_error`, :func:`ops_error`, :func:`dist_error`, :func:`graph_error`, :func:`prof_error`.

The device is the calling thread's current simulated device. Sub-module ids and codes are
torch_npu's ``_SubModuleID`` / ``ErrCode`` enums; a code is given by name (``"PARAM"``) or as an
:class:`ErrCode`. This module sits in the device core (the core's errors use it); the stand-in's
``torch_npu.utils._error_code`` re-exports it.
"""
from __future__ import annotations

import enum
import os
import sys
from typing import Tuple, Union

from ascend_compat.errors import torch_npu_text
from ascend_compat.simulator import _guard

#: torch_npu's sub-module ids (``_SubModuleID`` / C++ ``SubModule``)
SUBMODULES = {"PTA": 0, "OPS": 1, "DIST": 2, "GRAPH": 3, "PROF": 4, "UNKNOWN": 99}


class ErrCode(enum.Enum):
    """torch_npu's error codes: (number, meaning)."""

    SUCCESS = (0, "success")
    PARAM = (1, "invalid parameter")
    TYPE = (2, "invalid type")
    VALUE = (3, "invalid value")
    PTR = (4, "invalid pointer")
    INTERNAL = (5, "internal error")
    MEMORY = (6, "memory error")
    NOT_SUPPORT = (7, "feature not supported")
    NOT_FOUND = (8, "resource not found")
    UNAVAIL = (9, "resource unavailable")
    SYSCALL = (10, "system call failed")
    TIMEOUT = (11, "timeout error")
    PERMISSION = (12, "permission error")
    ACL = (100, "call acl api failed")
    HCCL = (200, "call hccl api failed")
    GE = (300, "call ge api failed")
    EXCEPT = (999, "applicaiton exception")  # sic, as torch_npu spells it

    @property
    def code(self) -> int:
        return self.value[0]

    @property
    def msg(self) -> str:
        return self.value[1]


Code = Union[str, ErrCode]


def _code(code: Code) -> ErrCode:
    return code if isinstance(code, ErrCode) else ErrCode[code]


def _compact() -> bool:
    try:
        return int(os.environ.get("TORCH_NPU_COMPACT_ERROR_OUTPUT", "0") or 0) != 0
    except ValueError:
        return False


def _interactive() -> bool:
    return bool(getattr(sys, "ps1", None)) or bool(sys.flags.interactive)


def _line(submodule: str, code: Code, rank: int) -> str:
    err = _code(code)
    try:
        device = int(_guard.current_device())
    except Exception:  # pragma: no cover - the suffix itself must never fail
        device = -1
    return "\n" + torch_npu_text.suffix(os.getpid(), device, rank, f"ERR{SUBMODULES[submodule]:02d}{err.code:03d}",
                                        submodule, err.msg)


def cpp_error(submodule: str, code: Code) -> str:
    """The suffix torch_npu's C++ ``<SUB>_ERROR(ErrCode::<code>)`` appends (``cpp_error("OPS", "TYPE")``)."""
    if _compact():
        return ""
    from ascend_compat.simulator._warn import rank_id

    return _line(submodule, code, rank_id())


def parse(err: str) -> Tuple[str, ErrCode]:
    """``"ERR01002"`` -> ``("OPS", ErrCode.TYPE)``; ValueError for anything else."""
    if len(err) != 8 or not err.startswith("ERR") or not err[3:].isdigit():
        raise ValueError(f"not a torch_npu error code: {err!r} (expected ERRsscc c, e.g. ERR01002)")
    sub = {v: k for k, v in SUBMODULES.items()}.get(int(err[3:5]))
    code = next((c for c in ErrCode if c.code == int(err[5:])), None)
    if sub is None or code is None:
        raise ValueError(f"unknown torch_npu error code {err!r}")
    return sub, code


def _python_error(submodule: str, code: Code) -> str:
    if _compact() or _interactive():
        return ""
    rank = -1
    if "torch.distributed" in sys.modules:
        try:
            import torch.distributed as dist

            rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else -1
        except Exception:
            rank = -1
    return _line(submodule, code, rank)


def pta_error(code: Code) -> str:
    """torch_npu's Python ``pta_error(ErrCode.<code>)``."""
    return _python_error("PTA", code)


def ops_error(code: Code) -> str:
    """torch_npu's Python ``ops_error(ErrCode.<code>)``."""
    return _python_error("OPS", code)


def dist_error(code: Code) -> str:
    """torch_npu's Python ``dist_error(ErrCode.<code>)``."""
    return _python_error("DIST", code)


def graph_error(code: Code) -> str:
    """torch_npu's Python ``graph_error(ErrCode.<code>)``."""
    return _python_error("GRAPH", code)


def prof_error(code: Code) -> str:
    """torch_npu's Python ``prof_error(ErrCode.<code>)``."""
    return _python_error("PROF", code)
