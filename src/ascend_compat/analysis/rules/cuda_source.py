"""Rule ``cuda-source``: CUDA source file."""
from __future__ import annotations

import ast
import re

from ascend_compat.analysis.findings import Finding
from ascend_compat.analysis.rules.base import MANUAL, Rule

RULE = Rule('cuda-source', 'extension', MANUAL, 'CUDA source file',
            'CUDA kernels (.cu/.cuh) do not run on Ascend.',
            'port to AscendC, or replace with torch / torch_npu operators.', order=27)
TRIGGERS = ("__global__", "<<<")  # CUDA C++ code in strings (an #include of a CUDA header has "cuda" or ".cuh")
#: a string literal that ends in .cu / .cuh (one search for the four spellings)
TRIGGER_PATTERNS = (re.compile(r"\.cuh?[\"']"),)
#: an #include of a CUDA header in code kept in a string
_CUDA_INCLUDE = re.compile(r'#\s*include\s*[<"](?:cuda|cub/|thrust/|ATen/cuda/|c10/cuda/|[\w/.]*\.cuh[>"])')
#: a string that is a path or glob of CUDA sources
CU_PATH = re.compile(r"^[\w./*\-{}]*\.cuh?$")


def _names_cuda_sources(v, expr) -> bool:
    """Whether ``expr`` holds a .cu path/glob string or a variable already known to hold CUDA sources."""
    held = v.state[RULE.id]
    for n in ast.walk(expr):
        if type(n) is ast.Constant and type(n.value) is str and n.value.endswith((".cu", ".cuh")) \
                and CU_PATH.match(n.value):
            return True
        if type(n) is ast.Name and n.id in held:
            return True
    return False


def on_assign(v, node, targets, value, augmented: bool) -> None:
    """Variables holding CUDA sources (``cuda_sources = glob("*.cu")``) and where they join a build
    (``sources += cuda_sources``, ``srcs = cpp + cuda_sources``)."""
    if RULE.id not in v.state or not _names_cuda_sources(v, value):
        return  # no CUDA source named so far in the file: nothing to follow
    held = v.state[RULE.id]
    uses = [n for n in ast.walk(value) if type(n) is ast.Name and n.id in held]
    if not augmented:  # the target holds CUDA sources too (``+=`` only adds them to a build list)
        for t in targets:
            if type(t) is ast.Name:
                held.add(t.id)
                v.dynamic_names.add(t.id)  # a later use may hold no trigger word
    if not augmented and type(value) is not ast.BinOp:
        return  # a plain copy is not where sources join a build
    for n in uses:
        v.report(n, RULE.id, f"{n.id} (CUDA sources) added to the build: " + RULE.explanation, RULE.suggestion)


STRING_ROLES = ("value",)


def on_string(v, node, s: str, role: str) -> None:
    """A string naming a CUDA source file or glob (``kernel.cu``, ``csrc/*.cu``); a string holding CUDA C++
    code (a kernel compiled at run time or written out by a generator: ``__global__``, ``<<<...>>>``, CUDA
    headers)."""
    if role != "value":
        return
    if s.endswith((".cu", ".cuh")) and CU_PATH.match(s):
        v.state.setdefault(RULE.id, set())
        v.report(node, RULE.id, f'"{s}" names CUDA source files: ' + RULE.explanation, RULE.suggestion)
    elif "\n" in s and ("__global__" in s or ("<<<" in s and ">>>" in s) or _CUDA_INCLUDE.search(s)):
        v.report(node, RULE.id, "CUDA C++ code in a string (compiled at run time or written out as a .cu file): "
                 + RULE.explanation, RULE.suggestion)


# ---------------------------------------------------------------- .cu / .cuh files
FILE_KINDS = ("cuda-source",)
#: at most 8 words between __global__ and the kernel's name: an unbounded run made a line of repeated
#: "__global__ " take minutes (every occurrence scanned to the line's end)
_GLOBAL = re.compile(r"__global__\s+(?:\w+\s+){0,8}?(\w+)\s*\(")


def on_file(path: str, kind: str, text: str) -> list:
    """Each ``__global__`` kernel of a CUDA source file, or the file itself when it defines none."""
    r = RULE
    out = []
    for i, line in enumerate(text.split("\n"), 1):
        m = _GLOBAL.search(line.split("//", 1)[0])
        if m:
            out.append(Finding(path, i, m.start() + 1, i, m.end() + 1, r.id, r.category, r.handling,
                               f"CUDA kernel {m.group(1)}: {r.explanation}", r.suggestion))
    if not out:
        out.append(Finding(path, 1, 1, 1, 1, r.id, r.category, r.handling, "CUDA source file: " + r.explanation,
                           r.suggestion))
    return out
