"""``torch_npu.utils._error_code`` of the stand-in: torch_npu's ``ErrCode`` and ``pta_error``/``ops_error``/...

The builders live in the device core (:mod:`ascend_compat.simulator._error_code`, which the core's own
errors use); this module gives them torch_npu's import path.
"""
from __future__ import annotations

from ascend_compat.simulator._error_code import (ErrCode, dist_error, graph_error, ops_error, prof_error,
                                                 pta_error)

__all__ = ["ErrCode", "pta_error", "ops_error", "dist_error", "graph_error", "prof_error"]
