"""The package's structure, measured from its imports (function-level imports included): no module
imports another in a circle, no layer imports a higher one, and no module guards an import of the
project's own code with ``except ImportError``."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Set

SRC = Path(__file__).resolve().parents[1] / "src" / "ascend_compat"

#: top-level part of the package -> its layer (a module may import its own layer and the ones below)
LAYERS = {
    "_version": 0, "_versions": 0, "_config": 0, "_log": 0, "_files": 0, "_lazy": 0, "_schemas": 0, "backend": 0, "data": 0, "knowledge": 0,
    "errors": 1,
    "simulator": 2, "cuda_shim": 2,
    "ecosystem": 3, "analysis": 3, "doctor": 3, "observe": 3,
    "coverage": 4, "perf": 4, "accuracy": 4,  # the tools that watch ops, on the observation layer
    "_inherit": 5, "_activation": 5, "_boot": 5, "plan": 6, "_transfer_to_npu": 6, "__init__": 6,
    "cli": 7, "__main__": 7,
}


def _modules() -> Dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = ["ascend_compat", *path.relative_to(SRC).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _imports(module: str, path: Path) -> Set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {_resolve(a.name) for a in node.names if a.name.startswith("ascend_compat")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            if base.startswith("ascend_compat"):
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    found.add(full if full in MODULES else _resolve(base))
    found.discard(module)
    found.discard("")
    return found


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _is_ancestor(a: str, b: str) -> bool:
    """``a`` is a package enclosing ``b`` (the top package ``ascend_compat`` excepted: it is the API
    layer above everything)."""
    return a != "ascend_compat" and b.startswith(a + ".")


def test_every_part_has_a_layer():
    assert {_part(m) for m in MODULES} <= set(LAYERS), sorted({_part(m) for m in MODULES} - set(LAYERS))


def test_no_layer_imports_a_higher_one():
    upward = sorted((m, d) for m, deps in GRAPH.items() for d in deps
                    if LAYERS[_part(d)] > LAYERS[_part(m)])
    assert upward == []


def test_no_import_circles():
    """Strongly connected components of the module graph, leaving out a module's imports of its own
    enclosing packages' ``__init__`` (a package's public face, read lazily by its members)."""
    graph = {m: {d for d in deps if not _is_ancestor(d, m)} for m, deps in GRAPH.items()}
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack, on_stack, circles = [], set(), []

    def visit(v: str) -> None:  # Tarjan, iteratively deep enough for this package
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    assert circles == []


def test_own_imports_are_never_guarded():
    guarded = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Try):
                continue
            catches = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
            if not catches & {"ImportError", "ModuleNotFoundError"}:
                continue
            for inner in ast.walk(ast.Module(body=node.body, type_ignores=[])):
                if isinstance(inner, ast.ImportFrom) and (inner.level or (inner.module or "").startswith("ascend_compat")):
                    guarded.append(f"{module}:{inner.lineno}")
                elif isinstance(inner, ast.Import) and any(a.name.startswith("ascend_compat") for a in inner.names):
                    guarded.append(f"{module}:{inner.lineno}")
    assert guarded == []


#: the simulator's own modules that may reach into its torch_npu stand-in: the package face (install()
#: wires core and stand-in together) and the import hook that serves the stand-in as ``torch_npu``
_SIM_WIRING = {"ascend_compat.simulator", "ascend_compat.simulator._stand_in"}


def test_simulator_core_never_imports_the_stand_in():
    """Inside the simulator, imports run from the torch_npu stand-in to the host-backed device core,
    never back: the core learns what it needs from the stand-in through registration callbacks."""
    stand_in = "ascend_compat.simulator.torch_npu"
    core = [m for m in MODULES if m.startswith("ascend_compat.simulator") and not m.startswith(stand_in)
            and m not in _SIM_WIRING]
    assert core and stand_in + ".npu" in MODULES
    back = sorted((m, d) for m in core for d in GRAPH[m] if d == stand_in or d.startswith(stand_in + "."))
    assert back == []


#: ``TorchDispatchMode`` subclasses outside the observation layer, none of which watches a script's ops for
#: a tool: the simulator's stand-ins of torch_npu's graph capture and FLOPs counter, and compare's host
#: computations that change what ops compute (TF32/HF32 rounding of float32 multiplicands, the float64 run)
_OWN_MODES = {"ascend_compat.simulator.torch_npu.npu.graphs", "ascend_compat.simulator.torch_npu.utils.flops_count",
              "ascend_compat.accuracy.hostrun", "ascend_compat.accuracy.golden_run"}


def test_tools_watch_ops_through_the_observation_layer():
    """One op hook (issue 24): audit, profile, compare and plan subclass ``observe.OpObserver``; no other
    module defines a dispatch mode of its own."""
    found = set()
    for module, path in MODULES.items():
        if module.startswith("ascend_compat.observe"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(ast.unparse(b).split(".")[-1] == "TorchDispatchMode"
                                                      for b in node.bases):
                found.add(module)
    assert found == _OWN_MODES
