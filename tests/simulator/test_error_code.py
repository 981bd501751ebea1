"""torch_npu's error-code suffix from its one builder (``simulator._error_code``): the C++ and Python
forms, compact mode, parsing, and the stand-in's ``torch_npu.utils._error_code`` path."""
from __future__ import annotations

import re

import pytest

from ascend_compat.simulator import _error_code as ec

LINE = re.compile(r"^\n\[ERROR\] \d{4}-\d\d-\d\d-\d\d:\d\d:\d\d \(PID:\d+, Device:-?\d+, RankID:(-?\d+)\) (ERR\d{5}) (\w+) (.+)$")


def test_cpp_suffix_reads_rank_from_the_environment(monkeypatch):
    monkeypatch.delenv("TORCH_NPU_COMPACT_ERROR_OUTPUT", raising=False)
    monkeypatch.setenv("RANK", "3")
    m = LINE.match(ec.cpp_error("OPS", "TYPE"))
    assert m and m.groups() == ("3", "ERR01002", "OPS", "invalid type")
    monkeypatch.delenv("RANK")
    assert LINE.match(ec.cpp_error("DIST", ec.ErrCode.HCCL)).groups() == ("-1", "ERR02200", "DIST", "call hccl api failed")


def test_python_suffix_ignores_rank_variable_without_a_process_group(monkeypatch):
    monkeypatch.delenv("TORCH_NPU_COMPACT_ERROR_OUTPUT", raising=False)
    monkeypatch.setenv("RANK", "3")
    assert LINE.match(ec.pta_error("NOT_SUPPORT")).groups() == ("-1", "ERR00007", "PTA", "feature not supported")
    assert LINE.match(ec.prof_error("PARAM")).group(2) == "ERR04001"


def test_compact_mode_drops_the_suffix(monkeypatch):
    monkeypatch.setenv("TORCH_NPU_COMPACT_ERROR_OUTPUT", "1")
    assert ec.cpp_error("PTA", "ACL") == "" and ec.ops_error("PARAM") == ""


def test_parse():
    assert ec.parse("ERR01002") == ("OPS", ec.ErrCode.TYPE)
    assert ec.parse("ERR00100") == ("PTA", ec.ErrCode.ACL)
    for bad in ("ERR0100", "ERR77002", "ERR01042", "E0100200"):
        with pytest.raises(ValueError):
            ec.parse(bad)
    with pytest.raises(KeyError):
        ec.cpp_error("OPS", "NO_SUCH_CODE")


def test_stand_in_path_re_exports_the_core_builder():
    from ascend_compat.simulator.torch_npu.npu import _errors
    from ascend_compat.simulator.torch_npu.utils import _error_code as stand_in

    assert stand_in.pta_error is ec.pta_error and _errors.pta_error is ec.pta_error
    assert stand_in.ErrCode.EXCEPT.msg == "applicaiton exception"


@pytest.mark.parametrize("value, rank", [(None, -1), ("3", 3), (" 3", 3), ("3x", 3), ("x", 0), ("-2", -2), ("", 0)])
def test_rank_is_read_once_as_torch_npu_reads_it(monkeypatch, value, rank):
    """torch_npu's OptionsManager::GetRankId (strtol of RANK) feeds both the warning filter and the error
    suffix: one reader (was: two parsers, "3x" read as 0)."""
    from ascend_compat.simulator import _error_code, _warn

    if value is None:
        monkeypatch.delenv("RANK", raising=False)
    else:
        monkeypatch.setenv("RANK", value)
    monkeypatch.delenv("TORCH_NPU_COMPACT_ERROR_OUTPUT", raising=False)
    assert _warn.rank_id() == rank
    assert _warn.should_print() == (rank in (0, -1))
    assert f"RankID:{rank})" in _error_code.cpp_error("OPS", "TYPE")
