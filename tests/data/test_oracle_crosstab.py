"""The oracle's cross-tabulation (tools/oracle_torch_npu_tests.py) on a tiny synthetic disabled list.

Running torch_npu's real test files is the tool's job, not CI's; this checks the matching rule
(torch_npu's ``_check_if_enable_npu``) and the counting."""
from __future__ import annotations

import json

from subproc import load_tool

oracle = load_tool("oracle_torch_npu_tests")

DISABLED = {
    "test_a_npu_float64 (__main__.TestFooPRIVATEUSE1)": ["", [""]],
    "test_b (__main__.TestFooPRIVATEUSE1)": ["", [""]],  # sanitized name disables every dtype
    "test_c_npu (__main__.TestFooNPU)": ["", [""]],  # NPU and PRIVATEUSE1 class names are interchangeable
    "test_d_npu (__main__.TestFooPRIVATEUSE1)": ["", ["910A"]],  # only on 910A: enabled on A2
    "test_e_npu (__main__.TestFooPRIVATEUSE1)": ["", ["A2"]],  # only on A2
    "malformed entry": ["", [""]],
    "test_f_npu (__main__.TestBar)": [""],  # one field only: ignored, as torch_npu ignores it
}


def outcomes(**tests):
    return {f"test_x.py::TestFooPRIVATEUSE1::{name}": outcome for name, outcome in tests.items()}


def test_sanitize_strips_device_and_dtype_suffixes():
    assert oracle.sanitize("test_a_npu_float64") == "test_a"
    assert oracle.sanitize("test_a_float32") == "test_a"
    assert oracle.sanitize("test_a_npu") == "test_a_npu"  # no dtype: nothing stripped, as in PyTorch
    assert oracle.sanitize("test_npu_vs_cpu") == "test_npu_vs_cpu"


def test_matching_rule_and_chip_filter():
    a2 = oracle.disabled_index(DISABLED, "A2")
    assert oracle.is_disabled(a2, "TestFooPRIVATEUSE1", "test_a_npu_float64")
    assert not oracle.is_disabled(a2, "TestFooPRIVATEUSE1", "test_a_npu_float32")
    assert oracle.is_disabled(a2, "TestFooPRIVATEUSE1", "test_b_npu_int8")
    assert oracle.is_disabled(a2, "TestFooPRIVATEUSE1", "test_c_npu")
    assert not oracle.is_disabled(a2, "TestFooPRIVATEUSE1", "test_d_npu")
    assert oracle.is_disabled(a2, "TestFooPRIVATEUSE1", "test_e_npu")
    assert not oracle.is_disabled(a2, "TestOtherPRIVATEUSE1", "test_a_npu_float64")
    assert not oracle.is_disabled(a2, "TestBar", "test_f_npu")
    a1 = oracle.disabled_index(DISABLED, "910A")
    assert oracle.is_disabled(a1, "TestFooPRIVATEUSE1", "test_d_npu")
    assert not oracle.is_disabled(a1, "TestFooPRIVATEUSE1", "test_e_npu")


def test_crosstab_counts_and_interesting_cells():
    index = oracle.disabled_index(DISABLED, "A2")
    table = oracle.crosstab(outcomes(test_a_npu_float64="passed", test_a_npu_float32="failed",
                                     test_b_npu_int8="failed", test_d_npu="skipped", test_e_npu="passed",
                                     test_z_npu="passed"), index)
    assert table["counts"] == {"enabled": {"passed": 1, "failed": 1, "skipped": 1},
                               "disabled": {"passed": 2, "failed": 1, "skipped": 0}}
    assert table["enabled_failed"] == ["test_x.py::TestFooPRIVATEUSE1::test_a_npu_float32"]
    assert table["disabled_passed"] == ["test_x.py::TestFooPRIVATEUSE1::test_a_npu_float64",
                                        "test_x.py::TestFooPRIVATEUSE1::test_e_npu"]
    assert "enabled" in oracle.format_table("f.py", table["counts"])
    json.dumps(table)  # the summary is plain JSON


def test_cpu_twin_of_a_device_generic_test_id():
    assert (oracle.cpu_nodeid("f.py::TestFooPRIVATEUSE1::test_x_npu_float32")
            == "f.py::TestFooCPU::test_x_cpu_float32")
    assert oracle.cpu_nodeid("f.py::TestAsArrayNPU::test_alias_npu_int8") == "f.py::TestAsArrayCPU::test_alias_cpu_int8"
    assert oracle.cpu_nodeid("f.py::TestBarPRIVATEUSE1::test_rot90_npu") == "f.py::TestBarCPU::test_rot90_cpu"
    # only the last device suffix is the instantiation's: a test named after the npu keeps it
    assert oracle.cpu_nodeid("f.py::TestBarNPU::test_npu_vs_npu_npu") == "f.py::TestBarCPU::test_npu_vs_npu_cpu"


def test_disabled_list_follows_torch_npus_choice(tmp_path):
    lists = tmp_path / "test" / "unsupported_test_cases"
    lists.mkdir(parents=True)
    (lists / ".pytorch-disabled-tests.json").write_text("{}")
    (lists / ".pytorch-disabled-tests-2.11.json").write_text("{}")
    assert oracle.default_disabled_list(tmp_path, "2.11.0+cpu").name == ".pytorch-disabled-tests-2.11.json"
    assert oracle.default_disabled_list(tmp_path, "2.13.0").name == ".pytorch-disabled-tests.json"
