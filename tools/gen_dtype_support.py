"""Generate ``src/ascend_compat/data/dtype_support.json``: the dtypes torch_npu refuses, per op.

Sources (all public; nothing is imported, files are read as text/bytes):

* Ascend/pytorch (bare git dir, ``--pytorch``): ``torch_npu/csrc/aten/common/ToKernelNpu.cpp`` (the
  ``_to_copy`` downcast message) and ``test/unsupported_test_cases/disabled_tests_type.json``
  (torch_npu's reasons for disabled tests: "aclnnX not implemented for DT_Y").
* Ascend/op-plugin (bare git dir, ``--op-plugin``): ``op_plugin/ops/opapi/*.cpp`` (kernels that
  refuse float64 themselves with ``TORCH_CHECK``, and which aten kernels call each aclnn API)
  and ``op_plugin/config/op_plugin_functions.yaml`` (the aten schemas, to name the overloads, and
  the kernels generated from it: an entry's ``gen_opapi`` ``exec: aclnnX`` calls aclnnX).
* a torch_npu wheel (``--wheel``): every message kept must be in the shipped ``libtorch_npu.so``.

::

    python tools/gen_dtype_support.py --pytorch PYTORCH_GIT_DIR --op-plugin OP_PLUGIN_GIT_DIR \\
        --wheel torch_npu-2.14.0-...whl [--out src/ascend_compat/data/dtype_support.json]

An op-plugin C++ kernel is mapped to aten overloads by name (``f`` and ``f_symint`` -> ``f.*``,
``f_out`` -> the ``out``-style overloads of ``f``) and by its parameter names (op-plugin kernels use the schema's
argument names). Kernels that cannot be mapped are printed and left out.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sources import git_describe, git_show, write_json  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "src" / "ascend_compat" / "data" / "dtype_support.json"
TO_COPY = "torch_npu/csrc/aten/common/ToKernelNpu.cpp"
REASONS = "test/unsupported_test_cases/disabled_tests_type.json"
OPAPI = "op_plugin/ops/opapi/"
FUNCTIONS_YAML = "op_plugin/config/op_plugin_functions.yaml"
ERR_KINDS = {"PARAM": "ERR01001 OPS invalid parameter", "TYPE": "ERR01002 OPS invalid type",
             "VALUE": "ERR01003 OPS invalid value", "NOT_SUPPORT": "ERR01007 OPS feature not supported"}

_FUNC_DEF = re.compile(r"^[A-Za-z_][\w:<>,&\s\*]*?\b(\w+)\(([^;{}]*?)\)\s*(?:const\s*)?\{", re.M)
_REFUSE = re.compile(r'TORCH_CHECK\(\s*!\(\s*\w+\s*==\s*at::kDouble\s*\)\s*,\s*"([^"]*)"\s*\+?\s*'
                     r'OPS_ERROR\(ErrCode::(\w+)\)')
_EXEC = re.compile(r"EXEC_NPU_CMD\w*\(\s*(aclnn\w+)\s*,")
_NOT_IMPLEMENTED = re.compile(r"(?<![\w/])(aclnn\w+) not implemented for (DT_\w+)")
_GEN_EXEC = re.compile(r"^  - func:\s*([\w.]+)\(.*?(?=^  - func:|\Z)", re.M | re.S)


def git_ls(git_dir: Path, ref: str, under: str) -> List[str]:
    out = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "--name-only", ref, under],
                         check=True, capture_output=True, text=True).stdout
    return [p for p in out.splitlines() if p.endswith(".cpp")]


def downcast_message(source: str) -> str:
    """The concatenated string literals of the ``TORCH_NPU_WARN_ONCE`` in ``_to_copy``."""
    m = re.search(r"TORCH_NPU_WARN_ONCE\(((?:\s*\"[^\"]*\")+)\s*\)", source)
    if not m:
        raise SystemExit(f"{TO_COPY}: no TORCH_NPU_WARN_ONCE found (did the source change?)")
    return "".join(re.findall(r'"([^"]*)"', m.group(1)))


def param_names(params: str) -> Tuple[str, ...]:
    """C++ parameter list -> names (``const at::Tensor& self, int64_t dim = 0`` -> (self, dim))."""
    names = []
    for part in _split_top(params, "<(", ">)"):
        words = re.findall(r"\w+", part.split("=")[0])
        if words:
            names.append(words[-1])
    return tuple(names)


def enclosing_function(source: str, pos: int) -> Optional[Tuple[str, Tuple[str, ...]]]:
    """(name, parameter names) of the last top-level function definition starting before ``pos``."""
    best = None
    for m in _FUNC_DEF.finditer(source, 0, pos):
        best = m
    return (best.group(1), param_names(best.group(2))) if best else None


def schema_index(yaml_text: str) -> Dict[str, List[Tuple[str, frozenset]]]:
    """Base op name -> [(overload, argument names)] from op_plugin_functions.yaml ``func:`` lines."""
    index: Dict[str, List[Tuple[str, frozenset]]] = {}
    for m in re.finditer(r"func:\s*([\w.]+)\((.*)\)\s*->", yaml_text):
        full, args = m.group(1), m.group(2)
        names = frozenset(p.split("=")[0].split()[-1] for p in _split_top(args)
                          if p.strip() and p.strip() != "*")
        entry = (full, names)
        if entry not in index.setdefault(full.split(".")[0], []):
            index[full.split(".")[0]].append(entry)
    return index


def _split_top(text: str, opening: str = "[(", closing: str = "])") -> List[str]:
    """``text`` split at the commas outside any bracket of ``opening``/``closing``."""
    parts, depth, cur = [], 0, ""
    for ch in text + ",":
        if ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts


def aten_overloads(func: str, params: Tuple[str, ...], index) -> List[str]:
    """The aten overloads an op-plugin kernel ``func(params)`` implements."""
    wanted = frozenset(params)
    if func.endswith("_symint"):
        func = func[:-len("_symint")]
    bases = [func]
    if func.endswith("_out"):
        bases.append(func[:-4])
    found = []
    for base in bases:
        for full, names in index.get(base, []):
            if names == wanted and full not in found:
                found.append(full)
    return sorted(found)


def scan_op_plugin(git_dir: Path, ref: str):
    """(refusals, aclnn -> aten overloads) from the opapi kernels."""
    index = schema_index(git_show(git_dir, ref, FUNCTIONS_YAML))
    refusals: Dict[str, dict] = {}
    callers: Dict[str, set] = {}
    for path in git_ls(git_dir, ref, OPAPI):
        source = git_show(git_dir, ref, path)
        for m in _REFUSE.finditer(source):
            fn = enclosing_function(source, m.start())
            ops = aten_overloads(*fn, index) if fn else []
            if not ops:
                print(f"  unmapped float64 refusal in {path}: {fn}")
            for op in ops:
                refusals[op] = {"message": m.group(1), "error": ERR_KINDS[m.group(2)], "kernel": path}
        for m in _EXEC.finditer(source):
            fn = enclosing_function(source, m.start())
            if fn:
                callers.setdefault(m.group(1), set()).update(aten_overloads(*fn, index))
    for m in _GEN_EXEC.finditer(git_show(git_dir, ref, FUNCTIONS_YAML)):
        api = re.search(r"^\s+exec:\s*(aclnn\w+)", m.group(0), re.M)
        if api and "gen_opapi:" in m.group(0):
            callers.setdefault(api.group(1), set()).add(m.group(1))
    return refusals, callers


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pytorch", required=True, type=Path, help="Ascend/pytorch git dir (bare is fine)")
    parser.add_argument("--pytorch-ref", default="HEAD")
    parser.add_argument("--op-plugin", required=True, type=Path, help="Ascend/op-plugin git dir (bare is fine)")
    parser.add_argument("--op-plugin-ref", default="HEAD")
    parser.add_argument("--wheel", required=True, type=Path, help="torch_npu wheel (.whl) to check messages against")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    with zipfile.ZipFile(args.wheel) as whl:
        binary = whl.read("torch_npu/lib/libtorch_npu.so")
    message = downcast_message(git_show(args.pytorch, args.pytorch_ref, TO_COPY))
    if message.encode() not in binary:
        raise SystemExit(f"the downcast message {message!r} is not in {args.wheel.name}")

    refusals, callers = scan_op_plugin(args.op_plugin, args.op_plugin_ref)
    for op, fact in sorted(refusals.items()):
        if fact["message"].encode() not in binary:
            print(f"  {op}: message not in the wheel, dropped")
            refusals.pop(op)

    reasons = json.loads(git_show(args.pytorch, args.pytorch_ref, REASONS))
    gaps: Dict[str, dict] = {}
    for test, reason in sorted(reasons.items()):
        for text in reason.values():
            for api, dtype in _NOT_IMPLEMENTED.findall(text):
                entry = gaps.setdefault(api, {"aten": sorted(callers.get(api, ())), "dtypes": [], "evidence": []})
                if dtype not in entry["dtypes"]:
                    entry["dtypes"].append(dtype)
                entry["evidence"].append(test)
    for api, entry in gaps.items():
        entry["dtypes"].sort()
        if not entry["aten"]:
            print(f"  {api}: no op-plugin kernel calls it; kept without aten overloads")

    data = {
        "_source": (f"Ascend/pytorch {git_describe(args.pytorch, args.pytorch_ref)}: {TO_COPY}, {REASONS}; "
                    f"Ascend/op-plugin {git_describe(args.op_plugin, args.op_plugin_ref)}: {OPAPI}*.cpp, "
                    f"{FUNCTIONS_YAML}; messages checked against {args.wheel.name}"),
        "_generated_by": "tools/gen_dtype_support.py",
        "to_copy_downcast": {"message": message, "source": TO_COPY},
        "refuses_float64": refusals,
        "aclnn_dtype_gaps": gaps,
    }
    for op, fact in sorted(refusals.items()):
        print(f"  refuses float64: {op}: {fact['message']!r}")
    for api, entry in sorted(gaps.items()):
        print(f"  {api} lacks {', '.join(entry['dtypes'])}: {', '.join(entry['aten']) or '-'}")
    write_json(args.out, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
