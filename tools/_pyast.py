"""Reading a Python package's public names from source with :mod:`ast` (never importing it).

``module_all`` finds a module's literal ``__all__`` (assignments, ``+=``, ``.append``/``.extend`` of
literals at module level). ``bound_names`` lists what a module binds at top level (defs, classes,
assignments, imports), resolving ``from .x import *`` through the star-imported module's
``__all__`` (or its public top-level names when it has none), the way Python does.
"""
from __future__ import annotations

import ast
from typing import Callable, Iterator, List, Optional, Set

ReadFn = Callable[[str], Optional[str]]  # in-package path -> source text or None


def _top_level(body: List[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, descending into if/try/with blocks but not into defs."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody"):
            if isinstance(node, (ast.If, ast.Try, ast.With)) and getattr(node, field, None):
                yield from _top_level(getattr(node, field))
        if isinstance(node, ast.Try):
            for h in node.handlers:
                yield from _top_level(h.body)


def _str_elts(value: ast.AST) -> Optional[List[str]]:
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        out = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return out
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        left, right = _str_elts(value.left), _str_elts(value.right)
        return (left or []) + (right or []) if left is not None or right is not None else None
    return None


def module_all(source: str) -> Optional[List[str]]:
    """The literal names a module puts in ``__all__`` (in order, de-duplicated), or None if it has none."""
    tree = ast.parse(source)
    names: Optional[List[str]] = None
    for node in _top_level(tree.body):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                elts = _str_elts(node.value)
                if elts is not None:
                    names = list(elts)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == "__all__":
            names = (names or []) + (_str_elts(node.value) or [])
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            f = node.value.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "__all__":
                args = node.value.args
                if f.attr == "append" and args and isinstance(args[0], ast.Constant):
                    names = (names or []) + [args[0].value]
                elif f.attr == "extend" and args:
                    names = (names or []) + (_str_elts(args[0]) or [])
    if names is None:
        return None
    seen: Set[str] = set()
    return [n for n in names if not (n in seen or seen.add(n))]


def literal_assignment(source: str, name: str):
    """The literal value (list/dict/...) assigned to top-level ``name``, or None."""
    tree = ast.parse(source)
    for node in _top_level(tree.body):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
                try:
                    return ast.literal_eval(node.value)
                except ValueError:
                    return None
    return None


def class_members(source: str, class_name: str) -> Optional[List[str]]:
    """Public method/attribute names of top-level class ``class_name``, or None if there is no such class."""
    tree = ast.parse(source)
    for node in _top_level(tree.body):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            out = []
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out.append(item.name)
                elif isinstance(item, ast.Assign):
                    out += [t.id for t in item.targets if isinstance(t, ast.Name)]
            return sorted(n for n in set(out) if not n.startswith("_"))
    return None


def _module_files(module: str) -> List[str]:
    path = module.replace(".", "/")
    return [path + ".py", path + "/__init__.py"]


def read_module(read: ReadFn, module: str) -> Optional[str]:
    for p in _module_files(module):
        text = read(p)
        if text is not None:
            return text
    return None


def _resolve_relative(current: str, is_package: bool, level: int, target: Optional[str]) -> str:
    parts = current.split(".")
    base = parts if is_package else parts[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def bound_names(read: ReadFn, module: str, _seen: Optional[Set[str]] = None) -> Set[str]:
    """Names bound at top level of dotted ``module`` (read through ``read``), star imports resolved."""
    _seen = set() if _seen is None else _seen
    if module in _seen:
        return set()
    _seen.add(module)
    source = read_module(read, module)
    if source is None:
        return set()
    is_package = read(module.replace(".", "/") + "/__init__.py") is not None
    tree = ast.parse(source)
    names: Set[str] = set()
    for node in _top_level(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        names.add(n.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import):
            for a in node.names:
                names.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            src = _resolve_relative(module, is_package, node.level, node.module) if node.level else (node.module or "")
            for a in node.names:
                if a.name == "*":
                    star_src = read_module(read, src)
                    if star_src is None:
                        continue
                    exported = module_all(star_src)
                    if exported is None:
                        exported = [n for n in bound_names(read, src, _seen) if not n.startswith("_")]
                    names.update(exported)
                else:
                    names.add(a.asname or a.name)
    return names


def submodules(read_names: List[str], package_dir: str) -> List[str]:
    """Public direct submodules of ``package_dir`` (``torch_npu/npu``) from a wheel's file list."""
    out = set()
    prefix = package_dir.rstrip("/") + "/"
    for name in read_names:
        if not name.startswith(prefix):
            continue
        rest = name[len(prefix):].split("/")
        if len(rest) == 1 and rest[0].endswith(".py") and rest[0] != "__init__.py":
            out.add(rest[0][:-3])
        elif len(rest) == 2 and rest[1] == "__init__.py":
            out.add(rest[0])
    return sorted(n for n in out if not n.startswith("_"))
