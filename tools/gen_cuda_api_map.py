#!/usr/bin/env python3
"""Generate ``src/ascend_compat/data/cuda_api_map.json``: for every public ``torch.cuda`` name, its
``torch.npu`` counterpart per torch_npu minor version.

Sources:
  * ``--torch DIR`` (repeatable): installed ``torch`` package directories (e.g. torch 2.13 and 2.14).
    ``torch/cuda/__init__.py``'s ``__all__`` plus, for each public submodule (``amp``, ``memory``,
    ``nvtx``, ``graphs``, ``comm``, ``jiterator``, ...), ``"<sub>.<name>"`` for its ``__all__``;
    read with ``ast``, nothing imported.
  * ``--npu-api``: the ``npu_api.json`` written by ``tools/gen_npu_api.py`` (torch_npu.npu names).
  * ``--doc VERSION FILE LABEL`` (repeatable): Ascend/pytorch's ``torch-cuda.md`` API support pages
    (hardware support, NPU name, "限制与说明" restrictions). A page applies to its own torch_npu
    version and the newer ones up to the next page.

Status per torch_npu version:
  * ``mapped``: ``torch.npu`` has the same name;
  * ``renamed``: a known renamed counterpart exists (CUDAGraph->NPUGraph,
    CUDAPluggableAllocator->NPUPluggableAllocator, cudart->npurt, nvtx->mstx);
  * ``unsupported``: neither exists, or torch_npu's docs mark it unsupported on every listed product.
``note`` carries our advice (a replacement, or how semantics differ); ``doc_note_zh`` the docs'
restriction text verbatim; ``support`` the docs' per-product support. Doc facts are stored per doc page
version under ``docs`` and apply to that version and newer ones up to the next page.

Usage: python tools/gen_cuda_api_map.py --torch DIR [--torch DIR2] [--npu-api PATH] [--doc 2.13 FILE LABEL ...]
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pyast import bound_names, module_all, submodules  # noqa: E402
from _sources import minor_key, version_tuple, write_json  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "src" / "ascend_compat" / "data"

# torch.cuda name -> torch.npu name, where torch_npu renamed it
RENAMES = {
    "CUDAGraph": "NPUGraph",
    "graphs.CUDAGraph": "graphs.NPUGraph",
    "CUDAPluggableAllocator": "NPUPluggableAllocator",
    "memory.CUDAPluggableAllocator": "memory.NPUPluggableAllocator",
    "cudart": "npurt",
    "nvtx": "mstx",
    "nvtx.mark": "mstx.mark",
    "nvtx.range_push": "mstx.range_push",
    "nvtx.range_pop": "mstx.range_pop",
    "nvtx.range_start": "mstx.range_start",
    "nvtx.range_end": "mstx.range_end",
    "nvtx.range": "mstx.mstx_range",
}

# Our advice for names without a counterpart (prefix match on the dotted name: "nccl" covers "nccl.*").
SUGGESTIONS = {
    "ComplexFloatStorage": "no NPU storage type; create complex tensors with device='npu' instead",
    "ComplexDoubleStorage": "no NPU storage type; create complex tensors with device='npu' instead",
    "CudaError": "torch_npu raises RuntimeError with an ERRxxxxx code; catch RuntimeError",
    "DeferredCudaCallError": "torch_npu raises RuntimeError for deferred init failures; catch RuntimeError",
    "check_error": "no equivalent; torch_npu checks ACL return codes itself and raises RuntimeError",
    "cudaStatus": "no equivalent",
    "GreenContext": "no equivalent (CUDA green contexts partition SMs); use torch.npu.set_device_limit to cap cube/vector cores",
    "green_contexts": "no equivalent; torch.npu.set_device_limit caps cube/vector core usage",
    "caching_allocator_enable": "no equivalent; configure the allocator with PYTORCH_NPU_ALLOC_CONF",
    "caching_allocator_disabled": "no equivalent; configure the allocator with PYTORCH_NPU_ALLOC_CONF",
    "memory.caching_allocator_enable": "no equivalent; configure the allocator with PYTORCH_NPU_ALLOC_CONF",
    "memory.caching_allocator_disabled": "no equivalent; configure the allocator with PYTORCH_NPU_ALLOC_CONF",
    "current_solver_handle": "no equivalent (cuSOLVER handle)",
    "device_memory_used": "use torch.npu.mem_get_info() (free, total) or `npu-smi info`",
    "memory_usage": "use torch.npu.utilization() or `npu-smi info -t usages -i <id>`",
    "memory.memory_usage": "use torch.npu.utilization() or `npu-smi info -t usages -i <id>`",
    "temperature": "no Python API; read it with `npu-smi info`",
    "power_draw": "no Python API; read it with `npu-smi info`",
    "clock_rate": "no Python API; read it with `npu-smi info -t board -i <id>`",
    "list_gpu_processes": "no Python API; `npu-smi info` lists the processes per NPU",
    "memory.list_gpu_processes": "no Python API; `npu-smi info` lists the processes per NPU",
    "get_arch_list": "no compute-capability list on NPU; torch.npu.get_soc_version() / get_device_name() identify the chip",
    "get_gencode_flags": "no equivalent (nvcc flags); NPU kernels are built with CANN",
    "get_stream_from_external": "use torch.npu.ExternalStream where available",
    "has_half": "NPUs support float16; treat as True",
    "has_magma": "no MAGMA on NPU; linear algebra runs through aclnn kernels or falls back to the CPU",
    "is_tf32_supported": "NPU uses HF32 instead of TF32: torch.npu.matmul.allow_hf32 / torch.npu.conv.allow_hf32",
    "jiterator": "no JIT kernel compiler on NPU; express the op with torch ops (or a custom AscendC kernel)",
    "nvtx": "use torch.npu.mstx (mark, range_start/range_end) with msprof",
    "nccl": "use torch.distributed with backend='hccl'",
    "sparse": "no equivalent",
    "tunable": "no TunableOp on NPU",
    "profiler": "use torch_npu.profiler (or torch.profiler with ProfilerActivity.NPU)",
    "_graph_annotations": "no equivalent",
    "graph_annotations": "no equivalent",
    "comm": "use torch.distributed collectives over hccl",
    "gds": "no GPUDirect Storage equivalent",
    "export_dot": "no equivalent",
    "export_graph_data": "no equivalent",
    "cudart": "use torch.npu.npurt where available",
    "CUDAGraph": "torch.npu.NPUGraph where available; otherwise run eagerly",
    "graph": "NPU graphs need a newer torch_npu; run eagerly",
    "MemPool": "needs a newer torch_npu",
    "use_mem_pool": "needs a newer torch_npu",
    "streams": "use torch.npu.Stream / torch.npu.Event",
}

# Notes for names that exist on NPU but behave differently (ours, from torch_npu's sources)
MAPPED_NOTES = {
    "get_device_capability": "returns None (with a warning) unless TORCH_NPU_DEVICE_CAPABILITY is set, e.g. '8.0'",
    "get_device_properties": "NPU properties: name, total_memory, cube_core_num, vector_core_num, L2_cache_size; CUDA-only fields are empty",
    "amp": "torch.npu.amp is deprecated upstream like torch.cuda.amp; prefer torch.amp with device_type='npu'",
    "amp.autocast": "prefer torch.autocast('npu')",
    "amp.GradScaler": "prefer torch.amp.GradScaler('npu')",
    "is_bf16_supported": "True on Atlas A2/A3 (910B/910_93) and newer; False on 910A/310P",
    "CUDAGraph": "torch.npu.NPUGraph; torch_npu's docs support graph capture for inference, not training",
    "graphs.CUDAGraph": "torch.npu.NPUGraph; torch_npu's docs support graph capture for inference, not training",
    "graph": "captures into an NPUGraph; torch_npu's docs support graph capture for inference, not training",
    "make_graphed_callables": "torch_npu's docs support graph capture for inference, not training",
    "CUDAPluggableAllocator": "torch.npu.NPUPluggableAllocator loads an allocator .so built against the NPU runtime",
    "cudart": "torch.npu.npurt() exposes the NPU runtime, not the CUDA runtime API",
    "nvtx": "torch.npu.mstx ranges and marks are collected by msprof/torch_npu.profiler, not Nsight",
}

HARDWARE = {
    "Atlas A2 训练系列产品": "Atlas A2 training",
    "Atlas A3 训练系列产品": "Atlas A3 training",
    "Atlas 训练系列产品": "Atlas training (910)",
    "Atlas A2 推理系列产品": "Atlas A2 inference",
    "Atlas 推理系列产品": "Atlas inference (310P)",
    "Ascend 950DT": "Ascend 950DT",
}

# Submodule members torch documents though they are not in the submodule's __all__
EXTRA_SUBMODULE_NAMES = {"jiterator": ["_create_jit_fn", "_create_multi_output_jit_fn"]}


def torch_version(torch_dir: Path) -> str:
    text = (torch_dir / "version.py").read_text(encoding="utf-8")
    m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)['\"]", text)
    if not m:
        raise SystemExit(f"error: no __version__ in {torch_dir / 'version.py'}")
    return m.group(1)


def torch_cuda_names(torch_dir: Path) -> List[str]:
    root = torch_dir.parent

    def read(p: str) -> Optional[str]:
        f = root / p
        return f.read_text(encoding="utf-8") if f.is_file() else None

    names = set(module_all(read("torch/cuda/__init__.py") or "") or [])
    files = [str(p.relative_to(root)) for p in (torch_dir / "cuda").rglob("*.py")]
    for sub in submodules(files, "torch/cuda"):
        text = read(f"torch/cuda/{sub}.py") or read(f"torch/cuda/{sub}/__init__.py") or ""
        sub_all = module_all(text)
        if sub_all is None:
            sub_all = sorted(n for n in bound_names(read, f"torch.cuda.{sub}") if not n.startswith("_")
                             and n[0].isupper())  # classes only for modules without __all__ (streams)
        names.add(sub)
        names.update(f"{sub}.{n}" for n in list(sub_all) + EXTRA_SUBMODULE_NAMES.get(sub, []))
    return sorted(names)


def parse_doc(text: str) -> Dict[str, dict]:
    """``torch-cuda.md`` -> {cuda name (without ``torch.cuda.``): {npu_name, support, restriction_zh}}."""
    out: Dict[str, dict] = {}
    sections = re.split(r"^### ", text, flags=re.M)[1:]
    for sec in sections:
        head = re.sub(r"<[^>]+>", "", sec.splitlines()[0]).strip()
        m = re.search(r"torch\.cuda\.([\w.]+)", head)
        if not m:
            continue
        name = m.group(1)
        # the API's own block ends where its first method sub-block (<font ...>) or its <div> ends
        sec = re.split(r"<font|</div>", sec, maxsplit=1)[0]
        entry: dict = {"npu_name": None, "support": {}, "restriction_zh": None}
        nm = re.search(r"\*\*NPU 形式名称\*\*[:：]\s*(\S+)", sec)
        if nm:
            entry["npu_name"] = re.sub(r"^(torch_npu|torch)\.npu\.", "", nm.group(1).strip("`"))
        for hw, mark in re.findall(r"^\|\s*(?:<term>)?([^|<]+?)(?:</term>)?\s*\|\s*([✔✘])\s*\|", sec, flags=re.M):
            entry["support"][HARDWARE.get(hw.strip(), hw.strip())] = mark == "✔"
        rm = re.search(r"\*\*限制与说明\*\*[:：][ \t]*(.*)", sec)  # the first one: the API's own
        if rm and rm.group(1).strip():
            entry["restriction_zh"] = " ".join(rm.group(1).split())
        out[name] = entry
    return out


def suggestion_for(name: str) -> Optional[str]:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        s = SUGGESTIONS.get(".".join(parts[:i]))
        if s:
            return s
    return None


def classify(name: str, npu: set, doc: Optional[dict]) -> Tuple[str, Optional[str], Optional[str]]:
    if doc is not None and doc["support"] and not any(doc["support"].values()):
        return "unsupported", None, ("torch_npu's docs mark it unsupported on every listed product"
                                     + (f"; {suggestion_for(name)}" if suggestion_for(name) else ""))
    if name in npu:
        return "mapped", name, MAPPED_NOTES.get(name)
    if "." in name and name.split(".", 1)[1] in npu and name.split(".")[0] not in ("nvtx", "nccl", "comm", "tunable", "gds", "profiler", "jiterator"):
        # torch.cuda.memory.mem_get_info -> torch.npu.mem_get_info (the submodule does not export it)
        return "mapped", name.split(".", 1)[1], MAPPED_NOTES.get(name.split(".", 1)[1])
    target = RENAMES.get(name)
    if target is not None and target in npu:
        return "renamed", target, MAPPED_NOTES.get(name) or MAPPED_NOTES.get(name.split(".")[0])
    return "unsupported", None, suggestion_for(name) or "no torch.npu counterpart"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--torch", type=Path, action="append", required=True, help="an installed torch package dir")
    ap.add_argument("--npu-api", type=Path, default=DATA / "npu_api.json")
    ap.add_argument("--doc", nargs=3, action="append", default=[], metavar=("VERSION", "FILE", "LABEL"))
    ap.add_argument("--output", type=Path, default=DATA / "cuda_api_map.json")
    args = ap.parse_args(argv)

    names_by_torch: Dict[str, List[str]] = {}
    for d in args.torch:
        v = minor_key(torch_version(d))
        names_by_torch[v] = torch_cuda_names(d)
        print(f"read torch {torch_version(d)} at {d}: {len(names_by_torch[v])} torch.cuda names")
    all_names = sorted(set().union(*names_by_torch.values()))

    npu_api = json.loads(args.npu_api.read_text(encoding="utf-8"))
    npu_versions = sorted(npu_api["versions"], key=version_tuple)
    print(f"read {args.npu_api.name}: torch_npu versions {', '.join(npu_versions)}")

    docs: List[Tuple[str, Dict[str, dict], str]] = []
    for v, f, label in args.doc:
        parsed = parse_doc(Path(f).read_text(encoding="utf-8"))
        docs.append((minor_key(v), parsed, label))
        print(f"read doc {label}: {len(parsed)} documented torch.cuda APIs")
    docs.sort(key=lambda d: version_tuple(d[0]))

    def doc_for(key: str) -> Optional[Tuple[str, Dict[str, dict], str]]:
        older = [d for d in docs if version_tuple(d[0]) <= version_tuple(key)]
        return older[-1] if older else None

    out_names: Dict[str, dict] = {}
    for name in all_names:
        history: List[dict] = []
        for key in npu_versions:
            npu = set(npu_api["versions"][key]["npu"])
            d = doc_for(key)
            status, npu_name, note = classify(name, npu, d[1].get(name) if d else None)
            row = {"status": status, "npu_name": npu_name, "note": note}
            if not history or {k: v for k, v in history[-1].items() if k != "from"} != row:
                history.append({"from": key, **row})
        doc_facts: Dict[str, Optional[dict]] = {}
        for v, parsed, label in docs:
            fact = parsed.get(name)
            if fact is not None:
                doc_facts[v] = {"doc": label, "doc_npu_name": fact["npu_name"],
                                "doc_note_zh": fact["restriction_zh"], "support": fact["support"]}
            elif doc_facts:
                doc_facts[v] = None  # a newer page no longer documents it
        info = {"torch": sorted((v for v, ns in names_by_torch.items() if name in ns), key=version_tuple),
                "history": history}
        if doc_facts:
            info["docs"] = doc_facts
        out_names[name] = info

    newest = npu_versions[-1]
    counts: Dict[str, int] = {}
    for info in out_names.values():
        counts[info["history"][-1]["status"]] = counts.get(info["history"][-1]["status"], 0) + 1
    print(f"{len(out_names)} names; status for torch_npu {newest}: {counts}")
    data = {
        "_source": {
            "description": "torch.cuda public names and their torch.npu counterparts per torch_npu minor version",
            "torch": {v: f"torch {v} torch/cuda sources (ast)" for v in sorted(names_by_torch, key=version_tuple)},
            "torch_npu": npu_api["_source"]["versions"],
            "docs": {v: label for v, _, label in docs},
        },
        "_generated_by": "tools/gen_cuda_api_map.py",
        "versions": npu_versions,
        "names": out_names,
    }
    write_json(args.output, data, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
