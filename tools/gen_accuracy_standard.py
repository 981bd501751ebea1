#!/usr/bin/env python3
"""Generate ``src/ascend_compat/data/accuracy_standard.json``: msprobe's accuracy standard (its API
accuracy pre-check, "新精度标准"), the facts ``ascend-compat compare`` judges each op by.

Source: the public Ascend/mstt repository (msprobe), read as text from a git directory (a bare clone
is enough); nothing is imported or copied, only names and numbers are extracted::

    python tools/gen_accuracy_standard.py --mstt MSTT.git [--ref HEAD] [--out src/ascend_compat/data/accuracy_standard.json]

What is read (paths under ``debug/accuracy_tools/msprobe/``):

* ``pytorch/api_accuracy_checker/compare/api_precision_standard.yaml``: which torch APIs each standard
  judges (absolute threshold, binary consistency, ULP, thousandth, accumulative error; every other API:
  benchmark comparison);
* ``pytorch/api_accuracy_checker/precision_standard/standard_config.py``: ``StandardConfig``'s per-dtype
  tables (small-value threshold and tolerances, rtol, minimum error, accumulative bound, the benchmark
  ratio thresholds, the ULP thresholds), parsed with :mod:`ast`;
* ``core/common/const.py``: ``CompareConst``'s ULP and thousandth constants and bfloat16's eps;
* ``pytorch/api_accuracy_checker/run_ut/run_ut_utils.py``: ``hf_32_standard_api`` (APIs whose float32
  benchmark runs as the NPU does, in HF32) and ``PRECISION_MAPPING`` (the golden's dtype per input dtype).

``compare/api_precision_threshold.yaml`` (per-API tolerances) is not read: no msprobe code loads it.

The torch API names are mapped to the aten ops ``compare`` sees (``ops``): the name itself, the
in-place and dunder forms folded onto it, and the aliases in :data:`ATEN` (``conv2d`` runs as
``aten::convolution`` and ``aten::convolution_backward``, ``greater`` as ``aten::gt`` ...). That mapping
is ours; the lists and numbers are msprobe's.
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path
from typing import Dict, List

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sources import git_describe, git_show, write_json  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "src" / "ascend_compat" / "data" / "accuracy_standard.json"
ROOT = "debug/accuracy_tools/msprobe/"
STANDARD_YAML = ROOT + "pytorch/api_accuracy_checker/compare/api_precision_standard.yaml"
STANDARD_CONFIG = ROOT + "pytorch/api_accuracy_checker/precision_standard/standard_config.py"
CONST = ROOT + "core/common/const.py"
RUN_UT_UTILS = ROOT + "pytorch/api_accuracy_checker/run_ut/run_ut_utils.py"

#: the yaml's section -> our standard's name
SECTIONS = {"AbsoluteThreshStandard": "absolute_threshold", "BinaryCompareStandard": "binary_consistency",
            "ULPStandard": "ulp", "ThousandthStandard": "thousandth",
            "AccumulativeErrorStandard": "accumulative_error"}

#: torch API name -> the aten ops it runs as, where the name is not itself the aten op (ours)
ATEN = {
    "conv1d": ["convolution", "convolution_backward"], "conv2d": ["convolution", "convolution_backward"],
    "divide": ["div"], "absolute": ["abs"], "greater": ["gt"], "greater_equal": ["ge"], "less": ["lt"],
    "less_equal": ["le"], "not_equal": ["ne"], "equal": ["eq"], "pad": ["constant_pad_nd"],
    "type_as": ["_to_copy"], "matmul": ["mm", "bmm"], "linear": ["addmm", "mm"], "leaky_relu": ["leaky_relu",
    "leaky_relu_backward"], "prelu": ["_prelu_kernel", "_prelu_kernel_backward"],
    "max_pool3d": ["max_pool3d_with_indices"], "chain_matmul": ["mm"],
}

#: StandardConfig attribute -> our key
CONFIG_TABLES = {"_small_value": "small_value", "_threshold_small_value_atol": "threshold_small_value_atol",
                 "_benchmark_small_value_atol": "benchmark_small_value_atol", "_rtol": "rtol",
                 "_accumulative_error_bound": "accumulative_error_bound", "_minmum_err": "minimum_err",
                 "_accumulative_error_eb_threshold": "accumulative_eb_threshold"}
RATIO_TABLES = {"_small_value_threshold": "small_value_err_ratio", "_rmse_threshold": "rmse",
                "_max_rel_err_threshold": "max_rel_err", "_mean_rel_err_threshold": "mean_rel_err",
                "_eb_threshold": "eb"}
SCALARS = {"_fp32_mean_ulp_err_threshold": "float32_mean_ulp_err", "ulp_err_proportion_ratio": "proportion_ratio",
           "_fp32_ulp_err_proportion": "float32_proportion", "_fp16_ulp_err_proportion": "float16_proportion"}
CONSTS = {"ULP_FLOAT32_THRESHOLD": "float32_ulp", "ULP_FLOAT16_THRESHOLD": "float16_ulp",
          "THOUSAND_RATIO_THRESHOLD": "rel_err", "THOUSANDTH_PASS_VALUE": "pass_ratio", "BFLOAT16_EPS": "bfloat16_eps"}


def _number(node: ast.AST) -> float:
    """A numeric literal, possibly written ``2**-10`` or ``-3.4e38``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_number(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return _number(node.left) ** _number(node.right)
    raise ValueError(f"not a number: {ast.unparse(node)}")


def _dtype_key(node: ast.AST) -> str:
    """``torch.float16`` (attribute or string) -> ``float16``; ``"default"`` and threshold names as they are."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace("torch.", "")
    raise ValueError(f"unexpected dict key: {ast.unparse(node)}")


def class_assignments(source: str, cls: str) -> Dict[str, ast.AST]:
    """The value nodes of ``NAME = value`` statements in class ``cls``'s body."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return {t.id: stmt.value for stmt in node.body if isinstance(stmt, ast.Assign)
                    for t in stmt.targets if isinstance(t, ast.Name)}
    raise ValueError(f"no class {cls}")


def module_assignment(source: str, name: str) -> ast.AST:
    for stmt in ast.parse(source).body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            return stmt.value
    raise ValueError(f"no module-level {name}")


def standard_config(source: str) -> dict:
    body = class_assignments(source, "StandardConfig")
    dtype: Dict[str, Dict[str, float]] = {}
    for attr, key in CONFIG_TABLES.items():
        table = body[attr]
        for k, v in zip(table.keys, table.values):
            dtype.setdefault(_dtype_key(k), {})[key] = _number(v)
    ratio = {key: _number(dict(zip(map(_dtype_key, body[attr].keys), body[attr].values))["error_threshold"])
             for attr, key in RATIO_TABLES.items()}
    ulp = {key: _number(body[attr]) for attr, key in SCALARS.items()}
    return {"dtype": dtype, "benchmark_ratio": ratio, "ulp": ulp}


def compare_consts(source: str) -> Dict[str, float]:
    body = class_assignments(source, "CompareConst")
    return {key: _number(body[name]) for name, key in CONSTS.items()}


def run_ut_facts(source: str) -> dict:
    hf32 = [e.value for e in module_assignment(source, "hf_32_standard_api").elts]
    mapping = module_assignment(source, "PRECISION_MAPPING")
    golden = {_dtype_key(k): _dtype_key(v) for k, v in zip(mapping.keys, mapping.values)}
    return {"hf32_apis": hf32, "golden_dtype": golden}


def aten_names(api: str) -> List[str]:
    """The aten base names torch API ``api`` runs as (in-place ``x_`` and dunder ``__x__``/``__ix__``/``__rx__``
    forms keep their in-place-ness)."""
    m = re.fullmatch(r"__(i|r)?(\w+?)__", api)
    base, inplace = (m.group(2), m.group(1) == "i") if m else (api.rstrip("_"), api.endswith("_"))
    if inplace:  # the in-place form of the forward op (no aten backward op is in place)
        return [ATEN.get(base, [base])[0] + "_"]
    return ATEN.get(base, [base])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mstt", required=True, type=Path, help="Ascend/mstt git dir (bare is fine)")
    parser.add_argument("--ref", default="HEAD")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    sections = yaml.safe_load(git_show(args.mstt, args.ref, STANDARD_YAML))
    apis = {SECTIONS[name]: sorted(names) for name, names in sections.items()}
    ops: Dict[str, str] = {}
    for standard, names in sorted(apis.items()):
        if standard == "accumulative_error":
            continue  # msprobe lists only its placeholder ``test_api`` there
        for api in names:
            for op in aten_names(api):
                if ops.setdefault(op, standard) != standard:
                    raise SystemExit(f"{op} is in two standards: {ops[op]} and {standard}")
    config = standard_config(git_show(args.mstt, args.ref, STANDARD_CONFIG))
    consts = compare_consts(git_show(args.mstt, args.ref, CONST))
    config["ulp"].update({k: consts[k] for k in ("float32_ulp", "float16_ulp")})
    facts = run_ut_facts(git_show(args.mstt, args.ref, RUN_UT_UTILS))
    data = {
        "_source": (f"Ascend/mstt {git_describe(args.mstt, args.ref)}: {STANDARD_YAML}, {STANDARD_CONFIG}, "
                    f"{CONST} (CompareConst), {RUN_UT_UTILS} (hf_32_standard_api, PRECISION_MAPPING)"),
        "_generated_by": "tools/gen_accuracy_standard.py",
        "api_standards": apis,
        "ops": ops,
        **config,
        "thousandth": {"rel_err": consts["rel_err"], "pass_ratio": consts["pass_ratio"]},
        "bfloat16_eps": consts["bfloat16_eps"],
        **facts,
    }
    for standard, names in sorted(apis.items()):
        print(f"  {standard}: {len(names)} APIs")
    print(f"  {len(ops)} aten ops mapped; dtypes {sorted(config['dtype'])}")
    write_json(args.out, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
