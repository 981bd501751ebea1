"""tools/gen_dtype_support.py's parsing on small synthetic op-plugin sources (the real run needs git
checkouts and a wheel; see tools/README.md)."""
from __future__ import annotations

from subproc import load_tool

gen = load_tool("gen_dtype_support")

YAML = """
  - func: sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)
    op_api: all_version
  - func: sort.values_stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
    op_api: all_version
  - func: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  - func: repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor
"""

CPP = """
namespace op_api {
std::tuple<at::Tensor, at::Tensor> sort(
    const at::Tensor& self,
    c10::optional<bool> stable,
    int64_t dim,
    bool descending) {
  auto dtype = self.scalar_type();
  TORCH_CHECK(!(dtype == at::kDouble), "Input data type should not be float64 " + OPS_ERROR(ErrCode::TYPE));
  EXEC_NPU_CMD(aclnnSort, self, argStable, dim, descending, values, indices);
}

at::Tensor repeat_interleave_symint(const at::Tensor& self, c10::SymInt repeats,
                                    c10::optional<int64_t> dim, c10::optional<int64_t> output_size) {
  EXEC_NPU_CMD(aclnnRepeatInterleaveIntWithDim, self, repeats_int, real_dim, output_size_expected, result);
}
}
"""

TO_COPY = """
      if (dtype == at::ScalarType::Double) {
        TORCH_NPU_WARN_ONCE(
            "Device do not support double dtype now, "
            "dtype cast replace with float.");
      }
"""


def test_downcast_message_is_the_concatenated_literal():
    assert gen.downcast_message(TO_COPY) == "Device do not support double dtype now, dtype cast replace with float."


def test_param_names_handle_templates_and_defaults():
    assert gen.param_names("const at::Tensor& self, c10::optional<int64_t> dim = 0, bool keepdim") == (
        "self", "dim", "keepdim")
    assert gen.param_names("std::tuple<int, int> pair, at::IntArrayRef size") == ("pair", "size")


def test_kernels_map_to_overloads_by_name_and_parameters():
    index = gen.schema_index(YAML)
    check = gen._REFUSE.search(CPP)
    assert check.group(1) == "Input data type should not be float64 " and check.group(2) == "TYPE"
    fn = gen.enclosing_function(CPP, check.start())
    assert fn == ("sort", ("self", "stable", "dim", "descending"))
    assert gen.aten_overloads(*fn, index) == ["sort.stable"]
    assert gen.aten_overloads("sort_out", ("self", "stable", "dim", "descending", "values", "indices"),
                              index) == ["sort.values_stable"]
    call = [m for m in gen._EXEC.finditer(CPP) if m.group(1) == "aclnnRepeatInterleaveIntWithDim"][0]
    assert gen.aten_overloads(*gen.enclosing_function(CPP, call.start()), index) == ["repeat_interleave.self_int"]
    assert gen.aten_overloads("sort", ("self", "dim"), index) == []  # parameters must match


def test_dtype_gap_records_are_read_one_api_at_a_time():
    reasons = ("aclnnIsClose not implemented for DT_BFLOAT16",
               "aclnnIsClose/aclnnCast not implemented for DT_BFLOAT16",  # two APIs: which one? left out
               "aclnnInplaceNormal implemented for DT_COMPLEX128",  # no claim
               "aclnnMaxDim not implemented for DT_DOUBLE")
    found = [gen._NOT_IMPLEMENTED.findall(text) for text in reasons]
    assert found == [[("aclnnIsClose", "DT_BFLOAT16")], [], [], [("aclnnMaxDim", "DT_DOUBLE")]]


def test_generated_kernels_map_their_exec_api_to_the_entry():
    yaml_text = """
  - func: isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> Tensor
    acl_op: all_version
    op_api: all_version
    gen_opapi:
      out:
        dtype: at::kBool
      exec: aclnnIsClose

  - func: isfinite(Tensor self) -> Tensor
    op_api: all_version

  - func: erf(Tensor self) -> Tensor
    gen_opapi:
      exec: aclnnErf
"""
    entries = {m.group(1): m.group(0) for m in gen._GEN_EXEC.finditer(yaml_text)}
    assert set(entries) == {"isclose", "isfinite", "erf"}
    assert "aclnnIsClose" in entries["isclose"] and "aclnnIsClose" not in entries["isfinite"]
    assert "aclnnErf" in entries["erf"]
