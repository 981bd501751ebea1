"""tools/gen_accuracy_standard.py's parsing on small synthetic msprobe sources (the real run reads an
Ascend/mstt git checkout; see tools/README.md), and the shipped table's shape."""
from __future__ import annotations

from subproc import load_tool

gen = load_tool("gen_accuracy_standard")

CONFIG = '''
import torch
class StandardConfig:
    _small_value = {torch.float16: 2**-10, torch.bfloat16: 2**-10, torch.float32: 2**-20, "default": 2**-20}
    _threshold_small_value_atol = {torch.float16: 2**-16, torch.bfloat16: 1e-16, torch.float32: 2**-30, "default": 2**-30}
    _benchmark_small_value_atol = {torch.float16: 1e-16, torch.bfloat16: 1e-16, torch.float32: 2**-30, "default": 2**-30}
    _rtol = {torch.float16: 2**-10, torch.bfloat16: 2**-8, torch.float32: 2**-20, "default": 2**-20}
    _accumulative_error_bound = {torch.float16: 2**-8, torch.bfloat16: 2**-7, torch.float32: 2**-11, "default": 2**-11}
    _small_value_threshold = {'error_threshold': 2, 'warning_threshold': 1, "default": 1}
    _rmse_threshold = {'error_threshold': 2, 'warning_threshold': 1, "default": 1}
    _max_rel_err_threshold = {'error_threshold': 10, 'warning_threshold': 1, "default": 1}
    _mean_rel_err_threshold = {'error_threshold': 2, 'warning_threshold': 1, "default": 1}
    _eb_threshold = {'error_threshold': 2, 'warning_threshold': 1, "default": 1}
    _minmum_err = {'torch.float16': 2**-11, 'torch.bfloat16': 2**-8, 'torch.float32': 2**-14, 'default': 2**-14}
    _accumulative_error_eb_threshold = {'torch.float16': 2**-20, 'torch.bfloat16': 2**-7, 'torch.float32': 2**-14,
                                        'default': 2**-14}
    _fp32_mean_ulp_err_threshold = 64
    ulp_err_proportion_ratio = 1
    _fp32_ulp_err_proportion = 0.05
    _fp16_ulp_err_proportion = 0.001
'''


def test_standard_config_numbers_are_read_with_their_dtypes():
    cfg = gen.standard_config(CONFIG)
    assert cfg["dtype"]["float16"]["rtol"] == 2 ** -10 and cfg["dtype"]["float32"]["minimum_err"] == 2 ** -14
    assert cfg["dtype"]["bfloat16"]["threshold_small_value_atol"] == 1e-16
    assert cfg["benchmark_ratio"] == {"small_value_err_ratio": 2, "rmse": 2, "max_rel_err": 10, "mean_rel_err": 2,
                                      "eb": 2}
    assert cfg["ulp"] == {"float32_mean_ulp_err": 64, "proportion_ratio": 1, "float32_proportion": 0.05,
                          "float16_proportion": 0.001}


def test_api_names_map_to_the_aten_ops_compare_sees():
    assert gen.aten_names("mul") == ["mul"] and gen.aten_names("mul_") == ["mul_"]
    assert gen.aten_names("__imul__") == ["mul_"] and gen.aten_names("__radd__") == ["add"]
    assert gen.aten_names("conv2d") == ["convolution", "convolution_backward"]
    assert gen.aten_names("greater_equal_") == ["ge_"] and gen.aten_names("divide") == ["div"]


def test_consts_and_run_ut_facts():
    consts = gen.compare_consts("class CompareConst:\n    ULP_FLOAT32_THRESHOLD = 32\n    ULP_FLOAT16_THRESHOLD = 1\n"
                                "    THOUSAND_RATIO_THRESHOLD = 0.001\n    THOUSANDTH_PASS_VALUE = 0.999\n"
                                "    BFLOAT16_EPS = 3.90625e-3  # 2 ** -8\n")
    assert consts == {"float32_ulp": 32, "float16_ulp": 1, "rel_err": 0.001, "pass_ratio": 0.999,
                      "bfloat16_eps": 3.90625e-3}
    facts = gen.run_ut_facts('hf_32_standard_api = ["conv1d", "conv2d"]\nPRECISION_MAPPING = {\n'
                             '    torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.float32: torch.float64}\n')
    assert facts == {"hf32_apis": ["conv1d", "conv2d"],
                     "golden_dtype": {"float16": "float32", "bfloat16": "float32", "float32": "float64"}}


def test_the_shipped_table_names_its_source_and_covers_the_standards():
    from ascend_compat import data

    table = data.accuracy_standard()
    assert table["_source"].startswith("Ascend/mstt ") and table["_generated_by"] == "tools/gen_accuracy_standard.py"
    assert set(table["api_standards"]) == {"absolute_threshold", "binary_consistency", "ulp", "thousandth",
                                           "accumulative_error"}
    ops = table["ops"]
    assert ops["mm"] == "ulp" and ops["convolution"] == "thousandth" and ops["add"] == "absolute_threshold"
    assert ops["relu"] == "binary_consistency" and "gelu" not in ops  # gelu: benchmark comparison
    assert {"float16", "bfloat16", "float32", "default"} <= set(table["dtype"])
