"""knowledge.operators: the op facts audit, profile, compare and the simulator read (one copy each)."""
from __future__ import annotations

from ascend_compat import data
from ascend_compat.knowledge import operators


def test_rewrite_for_takes_any_overload_spelling():
    assert operators.rewrite_for("aten::fmax.out") == operators.FALLBACK_REWRITES["fmax"][0]
    assert operators.rewrite_for("mode") == operators.FALLBACK_REWRITES["mode"][0]
    assert operators.rewrite_for("aten::relu") is None


def test_dtype_refusals_follow_the_generated_table():
    table = data.load_table("dtype_support.json")
    stable = operators.dtype_refusals("sort.stable")
    assert set(stable) == {"float64"} and stable["float64"].kind == "kernel"
    assert stable["float64"].message == table["refuses_float64"]["sort.stable"]["message"]
    max_dim = operators.dtype_refusals("max.dim")["float64"]
    assert max_dim.kind == "aclnn" and max_dim.api == "aclnnMaxDim" and not max_dim.needs_dim
    assert "aclnnMaxDim" in max_dim.reason and "DT_DOUBLE" in max_dim.reason
    assert operators.dtype_refusals("addmm") == {}  # float64 matmuls run in float64 on torch_npu
    for api, entry in table["aclnn_dtype_gaps"].items():
        for op in entry["aten"]:
            refused = operators.dtype_refusals(op)
            assert {operators.CANN_DTYPES[c] for c in entry["dtypes"]} <= set(refused), (api, op)
    assert operators.gap_overloads() == {op for e in table["aclnn_dtype_gaps"].values() for op in e["aten"]}


def test_float64_downcast_rule():
    assert operators.downcasts_to_float32("float32", "float64")
    assert operators.downcasts_to_float32("int32", "float64")
    assert not operators.downcasts_to_float32("float64", "float64")  # no cast at all
    assert not operators.downcasts_to_float32("float32", "float64", device_given=True)
    assert not operators.downcasts_to_float32("float32", "float64", layout_given=True)
    assert not operators.downcasts_to_float32("float32", "complex128")
    message = operators.float64_downcast_message()
    assert message == data.load_table("dtype_support.json")["to_copy_downcast"]["message"]
