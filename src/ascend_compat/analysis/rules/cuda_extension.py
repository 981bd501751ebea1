"""Rule ``cuda-extension``: custom CUDA extension."""
from __future__ import annotations

import ast
import re

from ascend_compat.analysis.findings import Finding
from ascend_compat.analysis.rules import device_string
from ascend_compat.analysis.rules.base import MANUAL, Rule, const_str
from ascend_compat.knowledge import extensions

RULE = Rule('cuda-extension', 'extension', MANUAL, 'custom CUDA extension',
            'CUDA C++ extensions cannot be built or loaded on Ascend.',
            'port the kernel to an AscendC custom op, or use an existing torch_npu op (torch_npu.npu_*); '
            'build C++ parts with torch_npu.utils.cpp_extension.NpuExtension.', order=26)
TRIGGERS = ("cuda", "nvcc")
EXTENSION = {"torch.utils.cpp_extension.CUDA_HOME": "ASCEND_HOME_PATH (CANN toolkit)",
             "torch.utils.cpp_extension.include_paths_cuda": None}


def qualname(q: str, version):
    if q in extensions.BY_QUALNAME and q.endswith("CUDAExtension"):  # load/load_inline: by their arguments
        rec = extensions.BY_QUALNAME[q]
        return rec.rule, rec.verdict, f"{rec.name}: {rec.reason}", rec.advice
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
        rec = extensions.BY_QUALNAME["torch.utils.cpp_extension." + q.rsplit(".", 1)[-1]]
        v.report(node, rec.rule, f"{q.rsplit('.', 1)[-1]}() builds CUDA sources: {rec.reason}", rec.advice,
                 handling=rec.verdict)


# ---------------------------------------------------------------- CMake and C++ files (line by line)
FILE_KINDS = ("cmake", "cpp")
# Linear in the line: every open-ended run is bounded or starts only at a token's start (a 500 KB line
# of repeated keywords took minutes: each occurrence scanned to the end of the line and back).
_CMAKE = re.compile(r"enable_language\s*\(\s*CUDA|project\s*\([^)]{0,1000}\bCUDA\b|find_package\s*\(\s*(?:CUDA|CUDAToolkit)\b"
                    r"|cuda_add_(?:library|executable)|CMAKE_CUDA_\w+|CUDA_ARCHITECTURES|(?<!\S)\S+?\.cuh?\b|\bnvcc\b"
                    r"|CUDA::\w+", re.I)
_CPP = re.compile(r"#\s*include\s*[<\"](?:cuda\w*\.h|cublas\w*\.h|cudnn\w*\.h|curand\w*\.h|cusparse\w*\.h|nccl\.h"
                  r"|ATen/cuda/|c10/cuda/|thrust/|cub/)[^>\"]{0,500}[>\"]|\bcuda[A-Z]\w*\s*\(|\b(?:at|c10)::cuda::\w+"
                  r"|\bkCUDA\b|DeviceType::CUDA\b|<<<")
#: a libtorch C++ device reference: a local edit, not a CUDA build (the Python shim does not reach C++)
_CPP_DEVICE = re.compile(r"\bkCUDA\b|DeviceType::CUDA\b")
_FILE_ADVICE = ("build with the CANN toolchain (AscendC ops, torch_npu.utils.cpp_extension.NpuExtension); "
                "replace CUDA runtime calls with ACL (aclrt*) / c10 PrivateUse1 APIs.")


def on_file(path: str, kind: str, text: str) -> list:
    """CUDA in a CMake build or C++ source, one finding per line (a C++ ``kCUDA`` device is a
    device-string finding: a local edit, not a CUDA build)."""
    low = text.lower()
    if "cuda" not in low and not ("nvcc" in text if kind == "cmake" else "<<<" in text):
        return []
    rx = _CMAKE if kind == "cmake" else _CPP
    out = []
    for i, line in enumerate(text.split("\n"), 1):
        m = rx.search(line.split("#", 1)[0] if kind == "cmake" else line.split("//", 1)[0])
        if not m:
            continue
        what = m.group(0).strip()
        if kind == "cpp" and _CPP_DEVICE.fullmatch(what):
            d = device_string.RULE
            out.append(Finding(path, i, m.start() + 1, i, m.end() + 1, d.id, d.category, MANUAL,
                               f"C++ CUDA device `{what}`: libtorch code is outside the Python shim's reach",
                               "use c10::DeviceType::PrivateUse1 (the npu device of torch_npu's C++ API)."))
            continue
        out.append(Finding(path, i, m.start() + 1, i, m.end() + 1, RULE.id, RULE.category, RULE.handling,
                           f"CUDA build/code reference `{what}`: {RULE.explanation}", _FILE_ADVICE))
    return out
