"""Rule ``cuda-extension``: custom CUDA extension."""
from __future__ import annotations

import ast

from ascend_compat.analysis.rules.base import MANUAL, Rule, const_str

RULE = Rule('cuda-extension', 'extension', MANUAL, 'custom CUDA extension',
            'CUDA C++ extensions cannot be built or loaded on Ascend.',
            'port the kernel to an AscendC custom op, or use an existing torch_npu op (torch_npu.npu_*); '
            'build C++ parts with torch_npu.utils.cpp_extension.NpuExtension', order=26)
TRIGGERS = ("cuda", "nvcc")
EXTENSION = {"torch.utils.cpp_extension.CUDAExtension": "torch_npu.utils.cpp_extension.NpuExtension",
             "torch.utils.cpp_extension.CUDA_HOME": "ASCEND_HOME_PATH (CANN toolkit)",
             "torch.utils.cpp_extension.include_paths_cuda": None}


def qualname(q: str, version):
    if q in EXTENSION:
        repl = EXTENSION[q]
        return (RULE.id, RULE.handling, f"{q.rsplit('.', 1)[-1]}: {RULE.explanation}",
                f"use {repl}; " + RULE.suggestion if repl and repl not in RULE.suggestion else RULE.suggestion)
    return None


STRING_ROLES = ("key",)


def on_string(v, node, s: str, role: str) -> None:
    """The ``"nvcc"`` key of extra_compile_args (a dict key or a subscript)."""
    if role == "key" and s == "nvcc":
        v.report(node, RULE.id, "nvcc compile flags: " + RULE.explanation, RULE.suggestion)


def on_call(v, node, q, attr) -> None:
    """``cpp_extension.load(...)`` / ``load_inline(...)`` with CUDA sources."""
    if not q or not (q.endswith("cpp_extension.load") or q.endswith("cpp_extension.load_inline")):
        return
    kws = node.keywords
    cu = any(k.arg == "cuda_sources" for k in kws)
    for s in [k.value for k in kws if k.arg == "sources"] + list(node.args[1:2]):
        for el in (s.elts if type(s) in (ast.List, ast.Tuple) else [s]):
            val = const_str(el)
            if val is not None and val.endswith((".cu", ".cuh")):
                cu = True
            elif type(el) is ast.Name and el.id in v.state.get("cuda-source", ()):
                cu = True  # a variable the cuda-source rule saw filled with CUDA sources
    if cu or any(k.arg == "with_cuda" and getattr(k.value, "value", None) is True for k in kws):
        v.report(node, RULE.id, f"{q.rsplit('.', 1)[-1]}() builds CUDA sources: " + RULE.explanation, RULE.suggestion)
