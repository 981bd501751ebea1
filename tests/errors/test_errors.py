"""explain(): every code family, E-codes by module letter and range, ERRxxyyy by module and type."""
from __future__ import annotations

import pytest

from ascend_compat.errors.explain import explain


def test_known_runtime_code():
    e = explain("507035")
    assert e.known and e.kind == "numeric" and e.symbols == ["ACL_ERROR_RT_VECTOR_CORE_EXCEPTION"]
    assert "vector core" in e.meaning and e.family == "rt_internal"
    assert any("ASCEND_LAUNCH_BLOCKING=1" in h for h in e.helps)
    assert any("plog" in h for h in e.helps)
    assert not e.nearest


def test_107002_context_empty():
    e = explain(107002)
    assert "context is empty" in e.meaning and "in use" not in e.meaning
    assert any("set_device" in f for f in e.fixes)


def test_table_code_without_handwritten_text_uses_header_label_and_family():
    e = explain("507022")  # ACL_ERROR_RT_IPC_ERROR: in the table, no text of ours
    assert e.known and e.symbols == ["ACL_ERROR_RT_IPC_ERROR"]
    assert e.meaning == "ipc error" and e.fixes and e.family_meaning


@pytest.mark.parametrize("code,family,near_prefix", [
    ("100099", "acl_param", "1000"), ("200077", "acl_resource", "2000"), ("500077", "acl_internal", "5000"),
    ("107099", "rt_param", "1070"), ("207077", "rt_resource", "2070"), ("507777", "rt_internal", "507"),
    ("561777", "aclnn_internal", "561"), ("161777", "aclnn_param", "161"),
])
def test_unknown_numeric_gets_family_and_nearest(code, family, near_prefix):
    e = explain(code)
    assert not e.known and e.family == family
    assert "not in the code table" in e.meaning
    assert e.nearest and all(n.startswith(near_prefix) for n in e.nearest)
    assert e.fixes


def test_unknown_range():
    e = explain("999999")
    assert e.family == "unknown" and not e.known and e.fixes


@pytest.mark.parametrize("code,word", [("9", "timeout"), ("hccl:11", "TCP"), ("24", "memory")])
def test_hccl_results(code, word):
    e = explain(code)
    assert e.kind == "hccl" and e.known and word.lower() in e.meaning.lower()


def test_ecode_known():
    e = explain("ez9999")
    assert e.code == "EZ9999" and e.known and "operator" in e.meaning
    assert any("ops package" in f for f in e.fixes)


def test_ei0002_points_at_hccl_exec_timeout():
    e = explain("EI0002")
    assert "timed out" in e.meaning and any("HCCL_EXEC_TIMEOUT" in h for h in e.helps)


@pytest.mark.parametrize("code,module,internal", [
    ("EZ1234", "operators", False), ("EE9876", "runtime", True), ("EI0099", "HCCL", False),
    ("EJ9001", "HCCP", True), ("EL0004", "driver", False), ("EQ0001", "'Q'", False),
])
def test_ecode_unknown_decoded_by_letter_and_range(code, module, internal):
    e = explain(code)
    assert not e.known and module in e.title
    assert ("internal-error range" in e.family_meaning) is internal
    assert ("user-error range" in e.family_meaning) is (not internal)


@pytest.mark.parametrize("code,module,typ,known", [
    ("ERR00100", "PTA", "ACL", True), ("ERR01100", "OPS", "ACL", True), ("ERR00007", "PTA", "not supported", True),
    ("ERR03011", "GRAPH", "timeout", False), ("ERR04012", "PROF", "permission", False),
    ("ERR02006", "DIST", "memory", False), ("ERR07001", "module 07", "invalid parameter", False),
])
def test_torch_npu_codes_decoded(code, module, typ, known):
    e = explain(code)
    assert e.kind == "torch_npu" and e.known is known
    assert module in e.title and typ.lower() in e.title.lower()
    assert e.fixes


def test_err00007_says_install_cpu_torch():
    e = explain("ERR00007")
    assert any("cpu" in f.lower() and "torch" in f for f in e.fixes)
    assert any("TORCH_DEVICE_BACKEND_AUTOLOAD=0" in f for f in e.fixes)


@pytest.mark.parametrize("bad", ["", "hello", "0x1F", "E99", "ERR1", "12345678", "EZ99999"])
def test_not_a_code(bad):
    with pytest.raises(ValueError, match="not an error code"):
        explain(bad)


def test_text_and_dict_forms():
    e = explain("207018")
    text = e.to_text()
    assert text.startswith("207018  ACL_ERROR_RT_DEVICE_OOM") and "fix:" in text and "meaning:" in text
    d = e.to_dict()
    assert d["code"] == "207018" and d["symbols"] == ["ACL_ERROR_RT_DEVICE_OOM"] and isinstance(d["fixes"], list)
