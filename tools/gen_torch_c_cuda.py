#!/usr/bin/env python3
"""Generate ``src/ascend_compat/data/torch_c_cuda.json``: the private ``torch._C`` names that are about CUDA.

Source: torch's own type stubs, ``torch/_C/__init__.pyi`` and the ``torch/_C/_*.pyi`` submodule stubs of the
installed torch (or ``--torch-dir``), read as text and parsed with :mod:`ast` (torch is never imported).
The stub groups its names under ``# Defined in torch/csrc/<dir>/<file>.cpp`` comments; two kinds are kept:

* ``cuda_build``: names defined under ``torch/csrc/cuda/`` (or another CUDA-only source: ``cuda.cpp``,
  ``cudnn``), and every name of the CUDA-only submodule stubs (``_cudnn``, ``_nvtx``, ``_cusparselt``,
  ``_cudart``): torch registers them only in CUDA builds, so on torch_npu's CPU build of torch they do not
  exist (``AttributeError``);
* ``gpu_switches``: names every build has whose name is about a CUDA-only technology (a GPU fuser,
  nvfuser, cuDNN, cuBLAS, cuFFT, NCCL): they run on Ascend and change nothing there.

The stub's comments place a few generic names (SDPA parameters, TensorIterator) in the CUDA module's section.
When the torch read is a CPU build that can be imported (as in the development set-up), its ``torch._C`` is
asked which of the ``cuda_build`` names it registers too: those exist in every build and move to
``gpu_switches`` when their name is about CUDA, or are dropped (the only import of the torch read).

Usage: python tools/gen_torch_c_cuda.py [--torch-dir DIR] [--out FILE] [--check]
``--check`` exits 1 when the file on disk differs from what would be generated.
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sources import write_text  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "src", "ascend_compat", "data", "torch_c_cuda.json")
#: stub submodules that exist only in CUDA builds
CUDA_SUBMODULES = ("_cudnn", "_nvtx", "_cusparselt", "_cudart")
_DEFINED = re.compile(r"#\s*Defined in\s+(\S+)")
_CUDA_SOURCE = re.compile(r"/cuda/|cuda\.cpp|cudnn", re.I)
_GPU_WORD = re.compile(r"(?:^|_)(?:gpu|cuda|cudnn|cublas|cublaslt|cufft|nvfuser|nccl|nvtx|cusparselt|cudart)(?:_|$)",
                       re.I)


def _torch_dir(given):
    if given:
        return given
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed; pass --torch-dir")
    return list(spec.submodule_search_locations)[0]


def _version(torch_dir: str) -> str:
    try:
        with open(os.path.join(torch_dir, "version.py"), encoding="utf-8") as fh:
            m = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)", fh.read(), re.M)
        return m.group(1).split("+")[0] if m else "unknown"
    except OSError:
        return "unknown"


def _top_names(tree):
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.lineno, node.name
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(t, ast.Name):
                    yield node.lineno, t.id


def scan(torch_dir: str):
    """(cuda_build, gpu_switches) names of torch._C (dotted below torch._C for submodules)."""
    stub_dir = os.path.join(torch_dir, "_C")
    with open(os.path.join(stub_dir, "__init__.pyi"), encoding="utf-8") as fh:
        text = fh.read()
    lines = text.split("\n")
    section = {}  # line -> the source file the stub says its names are defined in
    current = ""
    for i, line in enumerate(lines, 1):
        m = _DEFINED.match(line.strip())
        if m:
            current = m.group(1)
        section[i] = current
    cuda_build, switches = set(), set()
    for lineno, name in _top_names(ast.parse(text)):
        if not name.startswith("_") or name.startswith("__"):
            continue
        if _CUDA_SOURCE.search(section.get(lineno, "")):
            cuda_build.add(name)
        elif _GPU_WORD.search(name):
            switches.add(name)
    for sub in CUDA_SUBMODULES:
        path = os.path.join(stub_dir, sub + ".pyi")
        if os.path.isfile(path):
            cuda_build.add(sub)
            with open(path, encoding="utf-8") as fh:
                cuda_build |= {f"{sub}.{n}" for _, n in _top_names(ast.parse(fh.read())) if not n.startswith("__")}
    return sorted(cuda_build), sorted(switches)


def _cpu_build_names(torch_dir: str):
    """The ``torch._C`` names of the torch at ``torch_dir`` when it is an importable CPU build, else None."""
    spec = importlib.util.find_spec("torch")
    if spec is None or os.path.realpath(list(spec.submodule_search_locations)[0]) != os.path.realpath(torch_dir):
        return None
    import torch

    return None if torch.version.cuda else set(dir(torch._C))


def render(torch_dir: str) -> str:
    cuda_build, switches = scan(torch_dir)
    cpu = _cpu_build_names(torch_dir)
    if cpu is not None:
        every = [n for n in cuda_build if "." not in n and n in cpu]
        cuda_build = [n for n in cuda_build if n not in every]
        switches = sorted(set(switches) | {n for n in every if _GPU_WORD.search(n) or "cuda" in n.lower()})
    subs = [s for s in CUDA_SUBMODULES if os.path.isfile(os.path.join(torch_dir, "_C", s + ".pyi"))]
    doc = {
        "_generated_by": "tools/gen_torch_c_cuda.py",
        "_source": f"torch {_version(torch_dir)} type stubs: torch/_C/__init__.pyi (its '# Defined in' comments) and "
                   + ", ".join(f"torch/_C/{s}.pyi" for s in subs)
                   + ("; names its CPU build registers too moved out of cuda_build" if cpu is not None else ""),
        "cuda_build": cuda_build,
        "gpu_switches": switches,
    }
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--torch-dir")
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    text = render(_torch_dir(a.torch_dir))
    if a.check:
        with open(a.out, encoding="utf-8") as fh:
            same = fh.read() == text
        print("up to date" if same else f"{a.out} differs from what the stubs give")
        return 0 if same else 1
    write_text(a.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
