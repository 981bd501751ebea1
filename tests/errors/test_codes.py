"""The generated numeric code table (data/error_codes.json) and the generator tools/gen_error_codes.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ascend_compat.errors import codes

REPO = Path(__file__).resolve().parents[2]
GEN = REPO / "tools" / "gen_error_codes.py"


def test_table_has_headers_naming_source_and_script():
    table = codes._table()
    assert "torch_npu" in table["_source"] and "hccl_types.h" in table["_source"]
    assert table["_generated_by"] == "tools/gen_error_codes.py"
    assert codes.table_version()[0].isdigit()


def test_table_is_complete_for_every_family():
    fams = {e.family for e in codes.all_codes()}
    for fam in ("hccl", "acl_param", "acl_resource", "acl_storage", "acl_internal", "rt_param", "rt_resource",
                "rt_internal", "ge_param", "aclnn_param", "aclnn_runtime", "aclnn_internal"):
        assert fam in fams, fam
    # HcclResult 1..24 are all present
    assert {e.code for e in codes.all_codes() if e.family == "hccl"} >= set(range(1, 25))
    # the runtime header's ranges are present end to end
    nums = set(codes.known_numbers())
    assert {107000, 107002, 107020, 207000, 207018, 507000, 507035, 507901, 100000, 148049, 500001} <= nums
    assert all(e.family == codes.family_of(e.code) for e in codes.all_codes())


@pytest.mark.parametrize("code,symbol", [
    (107002, "ACL_ERROR_RT_CONTEXT_NULL"), (507035, "ACL_ERROR_RT_VECTOR_CORE_EXCEPTION"),
    (207004, "ACL_ERROR_RT_NO_DEVICE"), (100000, "ACL_ERROR_INVALID_PARAM"), (9, "HCCL_E_TIMEOUT"),
    (561003, "ACLNN_ERR_INNER_FIND_KERNEL_ERROR"), (145000, "ACL_ERROR_GE_PARAM_INVALID"),
])
def test_lookup(code, symbol):
    assert symbol in [e.symbol for e in codes.lookup(code)]


@pytest.mark.parametrize("code,family", [
    (100099, "acl_param"), (148099, "acl_param"), (200099, "acl_resource"), (300001, "acl_storage"),
    (500099, "acl_internal"), (107999, "rt_param"), (207999, "rt_resource"), (507999, "rt_internal"),
    (161999, "aclnn_param"), (361999, "aclnn_runtime"), (561999, "aclnn_internal"), (42, "hccl"),
    (999999, "unknown"),
])
def test_family_of_by_range(code, family):
    assert codes.family_of(code) == family
    assert family in codes.FAMILIES


def test_nearest_stays_in_family_and_is_sorted():
    near = codes.nearest(507999)
    assert len(near) == 3 and all(e.family == "rt_internal" for e in near)
    assert [e.code for e in near] == sorted(e.code for e in near)
    assert codes.nearest(107047)[-1].code == 107046  # the top of the 107 range


def _fake_wheel(tmp_path: Path) -> Path:
    """A zip laid out like a torch_npu wheel, with headers in the real formats (our own content)."""
    wheel = tmp_path / "torch_npu-9.9.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    base = "torch_npu/include/"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(base + "acl/acl_base_rt.h", "static const int ACL_SUCCESS = 0;\n"
                    "static const int ACL_ERROR_INVALID_PARAM = 100000;\n"
                    "static const int ACL_ERROR_BAD_ALLOC = 200000;\n")
        zf.writestr(base + "acl/error_codes/rt_error_codes.h", "#define ACL_RT_SUCCESS 0 // ok\n"
                    "#define  ACL_ERROR_RT_CONTEXT_NULL               107002 // current context null\n"
                    "#define ACL_ERROR_RT_VECTOR_CORE_EXCEPTION 507035 // vector core exception\n")
        zf.writestr(base + "acl/error_codes/ge_error_codes.h",
                    "static const uint32_t ACL_ERROR_GE_PARAM_INVALID = 145000U;\n")
        zf.writestr(base + "third_party/hccl/inc/hccl/hccl_types.h",
                    "typedef enum {\n    HCCL_SUCCESS = 0,  /**< success */\n"
                    "    HCCL_E_PARA = 1,   /**< parameter error */\n    HCCL_E_TIMEOUT = 9, /**< timeout */\n"
                    "    HCCL_E_RESERVED\n} HcclResult;\ntypedef enum {\n    HCCL_REDUCE_SUM = 0,\n"
                    "    HCCL_REDUCE_PROD = 1,\n} HcclReduceOp;\n")
    return wheel


def test_generator_parses_all_header_formats(tmp_path):
    out = tmp_path / "out" / "error_codes.json"
    proc = subprocess.run([sys.executable, str(GEN), str(_fake_wheel(tmp_path)), "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["torch_npu_version"] == "9.9.0" and doc["_generated_by"] == "tools/gen_error_codes.py"
    got = {(e["code"], e["symbol"]) for e in doc["codes"]}
    assert {(100000, "ACL_ERROR_INVALID_PARAM"), (200000, "ACL_ERROR_BAD_ALLOC"), (145000, "ACL_ERROR_GE_PARAM_INVALID"),
            (107002, "ACL_ERROR_RT_CONTEXT_NULL"), (507035, "ACL_ERROR_RT_VECTOR_CORE_EXCEPTION"),
            (1, "HCCL_E_PARA"), (9, "HCCL_E_TIMEOUT"), (161001, "ACLNN_ERR_PARAM_NULLPTR")} <= got
    assert not any(sym.startswith("HCCL_REDUCE") or code == 0 for code, sym in got)
    assert {e["label"] for e in doc["codes"] if e["code"] == 107002} == {"current context null"}
    assert list(out.parent.iterdir()) == [out]  # atomic write left no temp file


def test_generator_rejects_wrong_input(tmp_path):
    bad = tmp_path / "torch_npu-1.0-py3-none-any.whl"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("torch_npu/__init__.py", "")
    proc = subprocess.run([sys.executable, str(GEN), str(bad), "-o", str(tmp_path / "x.json")],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "missing" in proc.stderr
    assert not (tmp_path / "x.json").exists()


@pytest.mark.skipif(not os.environ.get("TORCH_NPU_WHEEL"),
                    reason="set TORCH_NPU_WHEEL=<torch_npu-*.whl> to check the committed table regenerates exactly")
def test_committed_table_regenerates_from_real_wheel(tmp_path):
    out = tmp_path / "error_codes.json"
    subprocess.run([sys.executable, str(GEN), os.environ["TORCH_NPU_WHEEL"], "-o", str(out)], check=True)
    assert json.loads(out.read_text())["codes"] == codes._table()["codes"]
