"""The scope-aware syntax-tree visitor that finds CUDA references in Python code.

It resolves imports and aliases per scope (``import torch.cuda as tc``, ``from torch import cuda``,
``from torch.cuda.amp import autocast``, ``cudnn = torch.backends.cudnn``) and reports strings
only where they are *used* as devices or backends: arguments of device-taking APIs, ``device=``
keywords, values assigned to device-named variables or to variables later used as devices,
comparisons with device expressions. Comments, docstrings, log/help/error messages and identifiers
such as ``use_cuda`` are never reported, because only those syntactic positions are looked at.

One :class:`PyAnalyzer` handles one file (or one notebook: cells share the module scope); it can
be fed several syntax trees of the same file (the scanner parses only the statements that matter).
It is the engine the rules run on: it keeps scopes, aliases and the intra-file flow of device and
backend values, and calls the hooks of the rule modules (:mod:`ascend_compat.analysis.rules.registry`)
at each call, attribute, string, comparison and import; the rules decide what is reported.
"""
from __future__ import annotations

import ast
import bisect
import functools
import operator
import re
from array import array
from typing import Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

from ascend_compat.analysis import fallback
from ascend_compat.analysis.findings import Finding
from ascend_compat.analysis.rules import cuda_library, nccl_backend
from ascend_compat.analysis.rules import registry as _registry
from ascend_compat.analysis.rules.base import const_str as _const_str
from ascend_compat.knowledge import backends, devices, env_vars
from ascend_compat.knowledge.records import MANUAL, PARTIAL

DEVICE_STR = re.compile(r"cuda(:\d+)?\Z")
DEVICE_PREFIX = re.compile(r"cuda(:|\Z)")
BACKEND_STR = nccl_backend.BACKEND_STR
ENV_GETTERS = frozenset({"os.getenv", "os.putenv", "os.unsetenv", "os.environ.get", "os.environ.setdefault",
                         "os.environ.pop", "os.environ.__getitem__", "os.environ.__setitem__"})
_DEVICE_NAME = re.compile(r"(?:^|_)(?:device|devices|dev|map_location|device_type|accelerator)(?:$|_)", re.I)
_BACKEND_NAME = re.compile(r"backend", re.I)

#: the knowledge record of an environment variable name (cached: tried for upper-case string constants)
_env_var = functools.lru_cache(maxsize=4096)(env_vars.lookup)
_NEWLINE = re.compile("\n")
_END = operator.methodcaller("end")
_IGNORE = re.compile(r"#\s*ascend-compat:\s*ignore(?:\[([^\]]*)\])?")


#: fields that can hold nodes worth visiting (operators and load/store contexts never are)
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}
_LEAF_FIELDS = frozenset({"ctx", "op", "ops", "type_comment", "id", "arg", "attr", "name", "module",
                          "level", "asname", "conversion", "kind", "lineno", "is_async", "simple"})


def _child_fields(t: type) -> Tuple[str, ...]:
    return tuple(f for f in t._fields if f not in _LEAF_FIELDS)


_STMTS = frozenset(c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.stmt))
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class _Scope:
    __slots__ = ("aliases", "idx", "ancestors", "kind", "globals")

    def __init__(self, idx: int, ancestors: Tuple[int, ...], kind: str):
        self.aliases: Dict[str, Optional[str]] = {}
        #: names a ``global`` statement declares in this (function) scope: bound in the module scope
        self.globals: Set[str] = set()
        self.idx = idx
        self.ancestors = ancestors
        self.kind = kind


#: modules whose every alias is followed. Not torch.distributed: a rule reports its parts through the names
#: themselves (``nccl``, ``ReduceOp``: trigger words) or a verdict on the alias (``classify``); following every
#: alias of it (``Shard``, ``dist``, a process group) made most lines of a distributed file visited, for nothing
_TRACK_PREFIXES = ("torch.cuda", "torch.backends", "torch.jit", "torch.utils.cpp_extension", "triton",
                   "numba", "torch.load")


_NUMPY_FLOAT64 = frozenset(f"numpy.{n}" for n in (
    "zeros", "ones", "empty", "full", "linspace", "eye", "identity", "random.rand", "random.randn",
    "random.random", "random.uniform", "random.normal", "loadtxt", "genfromtxt"))


def _catches_import_error(t) -> bool:
    """Whether an except clause's type catches ImportError (bare, Exception, ImportError, a tuple)."""
    if t is None:
        return True
    if type(t) is ast.Tuple:
        return any(_catches_import_error(e) for e in t.elts)
    name = t.id if type(t) is ast.Name else t.attr if type(t) is ast.Attribute else ""
    return name in ("ImportError", "ModuleNotFoundError", "Exception", "BaseException")


#: qualname roots worth binding as aliases (anything else is not followed)
_INTERESTING_ROOTS = frozenset({"torch", "triton", "numba", "deepspeed", "flash_attn", "os", "subprocess"})


def needs_tracking(q: str, reg=None) -> bool:
    """Whether uses of a name bound to ``q`` can be CUDA references that contain no trigger word: ``q`` is torch or in
    a followed module, the rules have a verdict on it or its members, or it is a module or class some members of
    which a rule reports (the rules' ``FOLLOWED_MODULES`` and ``FOLLOWED_MEMBERS``)."""
    reg = reg or _registry.default()
    classify = reg.classify
    return (q == "torch" or q.startswith(_TRACK_PREFIXES) or classify(q) is not None
            or classify(q + ".x") is not None or q in reg.followed_modules
            or q.rpartition(".")[2] in reg.followed_members)


def follows_binding(qual: str, name: str, reg=None) -> bool:
    """Whether ``name``, bound to ``qual``, is followed (its uses are trigger words): ``import torch`` binds nothing
    new, ``import triton`` binds a listed library whose uses say only ``triton``; else :func:`needs_tracking`."""
    reg = reg or _registry.default()
    return (qual != name or name in reg.trigger_imports) and needs_tracking(qual, reg)


def _is_device_name(name: str) -> bool:
    return bool(_DEVICE_NAME.search(name))


def suppressions(text: str) -> Dict[int, Optional[Set[str]]]:
    """line -> rules suppressed on that line (None = all), from ``# ascend-compat: ignore[...]``."""
    out: Dict[int, Optional[Set[str]]] = {}
    if "ascend-compat:" not in text:
        return out
    for i, line in enumerate(text.splitlines(), 1):
        m = _IGNORE.search(line)
        if m:
            out[i] = None if m.group(1) is None else {r.strip() for r in m.group(1).split(",") if r.strip()}
    return out


class PyAnalyzer:
    """Collects findings for one Python source; call :meth:`feed` per tree, then :meth:`finish`."""

    def __init__(self, path: str, text: str, torch_npu_version: Optional[str] = None,
                 cell: Optional[int] = None, hot_lines: Optional[List[int]] = None,
                 registry: Optional[_registry.Registry] = None, module_name: Optional[str] = None,
                 project=None):
        """``hot_lines``: sorted line numbers that may matter; statements touching none of them are
        skipped (recorded in :attr:`skipped`). None = visit everything. ``registry``: the rules
        (default: every rule module of the package). ``module_name``: the file's dotted module name
        (relative imports resolve against it); ``project``: the checked project's
        :class:`~ascend_compat.analysis.project.ProjectFacts` (None: the file alone)."""
        self.reg = registry or _registry.default()
        self.module_name = module_name
        self.is_package = path.endswith("__init__.py")
        self.project = project
        #: module-level functions of the file: name -> (first line, last line)
        self.module_defs: Dict[str, Tuple[int, int]] = {}
        #: other modules' names (absolute) this file uses as a device
        self.device_uses: Set[str] = set()
        self._hooks = self.reg.hooks
        self._value_hooks = self.reg.string_hooks["value"]
        self.path = path
        #: the whole text being analysed (``text`` is the current cell's in a notebook)
        self.full_text = text
        #: listed libraries star-imported at module level (``from apex.fp16_utils import *``)
        self.star_imports: List[str] = []
        self.hot = hot_lines
        self.skipped: List[Tuple[int, int]] = []
        #: names whose uses may be CUDA references without containing a trigger word
        self.dynamic_names: Set[str] = set()
        self.text = text
        self.version = torch_npu_version
        self.cell = cell
        #: offsets where the lines of ``text`` start (see :meth:`_line`), and whether it is ASCII
        self._lines: Optional[array] = None
        self._ascii: Optional[bool] = None
        self.findings: List[Finding] = []
        self._cell_texts: Dict[Optional[int], str] = {cell: text}
        self._seen: Set[tuple] = set()
        self.scopes: List[_Scope] = []
        self._n_scopes = 0
        self._anc: Dict[int, Tuple[int, ...]] = {}
        self.module = self._push("module")
        self.module.aliases["torch"] = "torch"  # unless rebound: snippets and notebooks use it bare
        # deferred decisions: (kind, scope idx, name) -> nodes ; kind in {"device", "backend"}
        self.candidates: Dict[Tuple[str, int, str], List[ast.AST]] = {}
        self.uses: Dict[Tuple[str, str], Set[int]] = {}
        self.attr_candidates: Dict[Tuple[str, str], List[ast.AST]] = {}
        self.attr_uses: Set[Tuple[str, str]] = set()
        #: per-rule data a rule keeps while the file is visited (keyed by rule id)
        self.state: Dict[str, object] = {}
        #: depth of ``try`` bodies whose handlers catch ImportError (optional imports)
        self.guarded = 0
        #: the handlers of each enclosing ``try`` body, innermost last (see analysis/fallback.py)
        self.catching: Tuple[list, ...] = ()
        self._caught: Dict[int, FrozenSet[str]] = {}
        #: calls of names not bound by an import: name -> [(the handlers around it, caller, line)]
        self.local_calls: Dict[str, List[fallback.Call]] = {}
        self._import_findings: Set[Tuple[int, int]] = set()
        #: depth of alternative branches (except handlers, if/else bodies): a binding there may not happen,
        #: so it does not erase a CUDA alias another branch gave the name (``except ImportError: xops = None``)
        self.alternative = 0
        #: (scope index, name) of names bound by an optional (guarded) import
        self.optional: Set[Tuple[int, str]] = set()
        #: string constants bound to a name, that name -> [(node, cell)]: an environment variable's name when
        #: the name is used as one (``key = "NCCL_DEBUG"; os.environ[key] = ...``)
        self.env_candidates: Dict[str, List[tuple]] = {}
        self.env_uses: Set[str] = set()
        #: argparse destinations declared ``type=int`` (``args.gpu``)
        self.int_attrs: Set[str] = set()
        #: names bound to NumPy arrays created with NumPy's default float64 dtype
        self.f64_arrays: Set[str] = set()
        self._function_names: List[str] = []
        #: names of the functions being visited, innermost last ("" for a class body)
        self.function_stack = self._function_names
        #: the definitions of the functions being visited, innermost last
        self.function_nodes: List[ast.AST] = []

    # ------------------------------------------------------------------ plumbing
    def feed(self, tree: ast.AST) -> None:
        """Visit one parsed tree (a whole module or some of its top-level statements)."""
        for stmt in getattr(tree, "body", ()):
            self.visit(stmt)

    def set_cell(self, cell: Optional[int], text: str) -> None:
        """Notebooks: the following trees come from this cell (positions count within it)."""
        self.cell, self.text, self._lines, self._ascii = cell, text, None, None
        self._cell_texts[cell] = text
        self.full_text = "\n".join(t for t in self._cell_texts.values() if t)

    def _in_cell(self, cell: Optional[int]) -> None:
        if cell != self.cell:
            self.cell, self.text, self._lines, self._ascii = cell, self._cell_texts[cell], None, None

    def visit(self, node) -> None:
        t = type(node)
        hot = self.hot
        if hot is not None:
            if t in _STMTS:
                lo = node.lineno
                if t in _DEFS and node.decorator_list:
                    lo = node.decorator_list[0].lineno
                hi = node.end_lineno or lo
            else:  # an expression: a hot statement's lines that hold no trigger (a header's test, a table's rows)
                hi = getattr(node, "end_lineno", None)
                if hi is None:
                    hi = lo = 0  # (no position: arguments, comprehension, withitem, ...: visited)
                else:
                    lo = node.lineno
            if hi:
                i = bisect.bisect_left(hot, lo)
                if i == len(hot) or hot[i] > hi:
                    self.skipped.append((lo, hi))
                    return
        fn = _DISPATCH.get(t)
        if fn is not None:
            fn(self, node)
            return
        fields = _CHILD_FIELDS.get(t)
        if fields is None:
            fields = _CHILD_FIELDS[t] = _child_fields(t)
        for name in fields:
            v = getattr(node, name, None)
            if type(v) is list:
                for x in v:
                    if isinstance(x, ast.AST):
                        self.visit(x)
            elif isinstance(v, ast.AST):
                self.visit(v)

    def _expr(self, node: ast.Expr) -> None:
        if type(node.value) not in (ast.Constant, ast.JoinedStr):  # a bare string (a docstring) does nothing
            self.visit(node.value)

    def _joined(self, node: ast.JoinedStr) -> None:
        values = node.values
        if values and type(values[0]) is ast.Constant and type(values[0].value) is str:
            for hook in self._hooks["on_joined"]:
                hook(self, node, values[0].value)
        for x in values:
            self.visit(x)

    def _constant(self, node: ast.Constant) -> None:
        if type(node.value) is str:
            for hook in self._value_hooks:
                hook(self, node, node.value, "value")

    def _visit_all(self, nodes: Iterable) -> None:
        for n in nodes:
            if n is not None:
                self.visit(n)

    def _noop(self, node) -> None:
        pass

    def _push(self, kind: str) -> _Scope:
        anc = (self.scopes[-1].ancestors + (self.scopes[-1].idx,)) if self.scopes else ()
        s = _Scope(self._n_scopes, anc, kind)
        self._anc[s.idx] = anc
        self._n_scopes += 1
        self.scopes.append(s)
        return s

    def _pop(self) -> None:
        self.scopes.pop()

    def _lookup(self, name: str) -> Optional[str]:
        for scope in reversed(self.scopes):
            if scope.kind == "class" and scope is not self.scopes[-1]:
                continue
            if name in scope.aliases:
                return scope.aliases[name]
        return None

    def _bind(self, name: str, qual: Optional[str]) -> None:
        scope = self.scopes[-1]
        aliases = (self.module if name in scope.globals else scope).aliases
        if qual is None and self.alternative and aliases.get(name) is not None:
            return  # a name is CUDA-bound if any branch binds it to CUDA code
        aliases[name] = qual
        if qual is not None and self.project is not None and (name in self.project.words
                                                              or qual in self.project.symbols):
            self.dynamic_names.add(name)  # a project fact's symbol (or an alias of one): its uses may hold no trigger
        if self.guarded and qual is not None:
            self.optional.add((self.scopes[-1].idx, name))
        if qual is not None and follows_binding(qual, name, self.reg):
            self.dynamic_names.add(name)

    def bound(self, name: str) -> bool:
        """Whether ``name`` is bound in a scope visible here (to anything)."""
        return any(name in sc.aliases for sc in self.scopes if sc.kind != "class" or sc is self.scopes[-1])

    def classify(self, q: str):
        """The rules' verdict on a resolved dotted name: (rule, handling, message, suggestion) or None."""
        c = self.reg.classify(q, self.version)
        if c is not None and c[0] == cuda_library.RULE.id and cuda_library.own(self, q):
            return None
        return c

    def qual(self, node) -> Optional[str]:
        """Fully qualified name of a Name/Attribute chain rooted in an import, else None."""
        attrs = []
        while type(node) is ast.Attribute:
            attrs.append(node.attr)
            node = node.value
        if type(node) is not ast.Name:
            return None
        base = self._lookup(node.id)
        if base is None:
            return None
        if attrs:
            attrs.reverse()
            return base + "." + ".".join(attrs)
        return base

    def _line(self, n: int) -> Optional[str]:
        """Line ``n`` (1-based, ``\\n``-separated) of the current text, through a table of line starts
        (a large file's lines as a list of strings take several times its size)."""
        starts = self._lines
        if starts is None:
            starts = self._lines = array("q", [0])
            starts.extend(map(_END, _NEWLINE.finditer(self.text)))  # (no Python frame per line)
        if not 0 < n <= len(starts):
            return None
        return self.text[starts[n - 1]:starts[n] - 1 if n < len(starts) else len(self.text)]

    def segment(self, node) -> Optional[str]:
        """Source text of a node (like ast.get_source_segment, without re-splitting the file)."""
        l1, l2 = node.lineno, getattr(node, "end_lineno", None)
        if l2 is None or l1 < 1 or l2 < l1 or self._line(l2) is None:
            return None
        seg = [self._line(n).encode("utf-8") for n in range(l1, l2 + 1)]
        seg[-1] = seg[-1][:node.end_col_offset]
        seg[0] = seg[0][node.col_offset:]
        return b"\n".join(seg).decode("utf-8", "replace")

    def _col(self, line: int, col_offset: int) -> int:
        if self._ascii is None:
            self._ascii = self.text.isascii()
        s = None if self._ascii else self._line(line)
        if s is not None and not s.isascii():
            return len(s.encode("utf-8")[:col_offset].decode("utf-8", "replace")) + 1
        return col_offset + 1

    def report(self, node, rule: str, message: str, suggestion: Optional[str] = None,
               handling: Optional[str] = None) -> None:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        key = (self.cell, line, col, rule)
        if key in self._seen:
            return
        self._seen.add(key)
        r = self.reg.rules[rule]
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        handling = handling or r.handling
        import_site = False
        if handling == MANUAL and rule in fallback.RULES:
            import_site = type(node) in (ast.Import, ast.ImportFrom, ast.alias)
            if self.catching and fallback.guards(self.caught_by(self.catching), import_site, rule):
                handling, message = PARTIAL, fallback.note(message, "its failure is caught here")
        self.findings.append(Finding(
            path=self.path, line=line, col=self._col(line, col), end_line=end_line,
            end_col=self._col(end_line, end_col) if end_col is not None else self._col(line, col),
            rule=rule, category=r.category, handling=handling, message=message,
            suggestion=suggestion or r.suggestion, cell=self.cell))
        if import_site:
            self._import_findings.add((line, self.findings[-1].col))

    def caught_by(self, tries: Tuple[list, ...]) -> FrozenSet[str]:
        """The exception names the handlers of ``tries`` (a :attr:`catching` snapshot) catch without raising
        again (read once per ``try``, only when a manual construct asks)."""
        out: FrozenSet[str] = frozenset()
        for handlers in tries:
            names = self._caught.get(id(handlers))
            if names is None:
                names = self._caught[id(handlers)] = fallback.caught(handlers, self._line)
            out |= names
        return out

    # ------------------------------------------------------------------ imports and scopes
    def _import_line(self, node, q: str) -> None:
        """An import line binding a CUDA module or name (``import torch.backends.cudnn as cudnn``)."""
        c = self.classify(q)
        if c is not None:
            rule, handling, msg, sugg = c
            if q == "torch.cuda":
                msg = "the shim maps it to torch.npu"
            for prefix in (q + ": ", q.rsplit(".", 1)[-1] + ": ", q):
                if msg.startswith(prefix):
                    msg = msg[len(prefix):]
                    break
            self.report(node, rule, f"import of {q}" + (f": {msg}" if msg else ""), sugg, handling)

    def _library_name_line(self, alias, q: str) -> None:
        """A name of a reported library import, on a line of its own (``from pynvml import (\\n    nvmlInit,``),
        rated as a use of it (optional when the import is guarded)."""
        c = self.classify(q)
        if c is not None and c[0] == cuda_library.RULE.id:
            rule, handling, msg, sugg = cuda_library.adjust_use(self, alias.name, c)
            if handling == MANUAL and self.guarded:
                handling, msg = PARTIAL, msg + "; optional (the import is guarded by except ImportError)"
            self.report(alias, rule, f"import of {msg}", sugg, handling)

    def _on_import(self, node, module: str, names=()) -> bool:
        return any(hook(self, node, module, names) for hook in self._hooks["on_import"])

    def _import(self, node: ast.Import) -> None:
        for a in node.names:
            if not self._on_import(node, a.name) and a.asname:
                self._import_line(a if getattr(a, "lineno", None) else node, a.name)
            if a.asname:
                self._bind(a.asname, a.name)
            else:
                top = a.name.split(".", 1)[0]
                self._bind(top, top)

    def _global(self, node: ast.Global) -> None:
        self.scopes[-1].globals.update(node.names)

    def _dynamic_import(self, value) -> Optional[str]:
        """The module ``importlib.import_module("name")`` imports (a constant absolute name), else None."""
        if type(value) is ast.Call and value.args and type(value.func) in (ast.Name, ast.Attribute) \
                and self.qual(value.func) == "importlib.import_module":
            s = _const_str(value.args[0])
            if s and not s.startswith(".") and len(value.args) == 1:
                return s
        return None

    def _import_from(self, node: ast.ImportFrom) -> None:
        mod = node.module
        if node.level:
            from ascend_compat.analysis.project import resolve_relative

            mod = resolve_relative(self.module_name, self.is_package, node.level, node.module) \
                if self.module_name else None
        if not mod:
            for a in node.names:
                self._bind(a.asname or a.name, None)
            return
        reported = self._on_import(node, mod, [a.name for a in node.names])
        if not reported and not node.level and any(a.name == "*" for a in node.names):
            self.star_imports.append(None)  # names of an unlisted module: star-bound names are ambiguous
        first = node.lineno
        for a in node.names:
            if a.name == "*":
                continue
            q = f"{mod}.{a.name}"
            if not reported and "." not in mod:
                reported = self._on_import(node, q)
            line = getattr(a, "lineno", None)
            if not reported:  # each name at its own line (a multi-line import names one per line)
                self._import_line(a if line else node, q)
            elif line and line != first:  # a library's name on a line of its own: that line is edited too
                self._library_name_line(a, q)
            self._bind(a.asname or a.name, q)

    def _try(self, node: ast.Try) -> None:
        guarded = any(_catches_import_error(h.type) for h in node.handlers)
        self.guarded += guarded
        outer = self.catching
        self.catching = outer + (node.handlers,)
        try:
            self._visit_all(node.body)
        finally:
            self.guarded -= guarded
            self.catching = outer
        self.alternative += 1
        try:
            for h in node.handlers:
                self.visit(h)
        finally:
            self.alternative -= 1
        self._visit_all(node.orelse)
        self._visit_all(node.finalbody)

    def _if(self, node: ast.If) -> None:
        test = node.test.operand if type(node.test) is ast.UnaryOp and type(node.test.op) is ast.Not else node.test
        if not (type(test) is ast.Name and self.is_optional(test)):
            self.visit(node.test)  # (``if amp:`` only tests whether an optional import worked: no use of it)
        self.alternative += 1
        try:
            self._visit_all(node.body)
            self._visit_all(node.orelse)
        finally:
            self.alternative -= 1

    def is_optional(self, node) -> bool:
        """Whether the name a Name/Attribute chain starts from was bound by an optional (guarded) import."""
        while type(node) is ast.Attribute:
            node = node.value
        if type(node) is not ast.Name:
            return False
        for scope in reversed(self.scopes):
            if scope.kind == "class" and scope is not self.scopes[-1]:
                continue
            if node.id in scope.aliases:
                return (scope.idx, node.id) in self.optional
        return False

    def _params(self, args: ast.arguments) -> List[ast.arg]:
        ps = list(getattr(args, "posonlyargs", [])) + list(args.args) + list(args.kwonlyargs)
        for extra in (args.vararg, args.kwarg):
            if extra is not None:
                ps.append(extra)
        return ps

    def _function(self, node) -> None:
        if not self._function_names:
            lo = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            self.module_defs[node.name] = (lo, node.end_lineno or node.lineno)
        self._visit_all(node.decorator_list)
        for hook in self._hooks["on_def"]:
            hook(self, node)
        a = node.args
        positional = list(getattr(a, "posonlyargs", [])) + list(a.args)
        defaults = list(zip(positional[len(positional) - len(a.defaults):], a.defaults))
        defaults += [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
        self._visit_all(d for _, d in defaults)
        if node.returns is not None:
            self.visit(node.returns)
        self._bind(node.name, None)
        scope = self._push("function")
        for p in self._params(a):
            self._bind(p.arg, None)
        for p, d in defaults:
            self._candidate(p.arg, d)
        self._function_names.append(node.name)
        self.function_nodes.append(node)
        self._visit_all(node.body)
        self.function_nodes.pop()
        self._function_names.pop()
        self._pop()
        del scope

    def _lambda(self, node: ast.Lambda) -> None:
        self._visit_all(node.args.defaults)
        self._push("function")
        for p in self._params(node.args):
            self._bind(p.arg, None)
        self.visit(node.body)
        self._pop()

    def _class(self, node: ast.ClassDef) -> None:
        self._visit_all(node.decorator_list)
        self._visit_all(node.bases)
        self._visit_all(k.value for k in node.keywords)
        self._bind(node.name, None)
        self._push("class")
        self._function_names.append("")
        self._visit_all(node.body)
        self._function_names.pop()
        self._pop()

    # ------------------------------------------------------------------ assignments
    def _assign(self, node) -> None:
        value = node.value
        if value is not None:
            self.visit(value)
        targets = node.targets if type(node) is ast.Assign else [node.target]
        for t in targets:
            if type(node) is ast.AnnAssign and node.annotation is not None:
                self.visit(node.annotation)
            if type(t) is ast.Name:
                if type(value) is ast.Call and self.numpy_float64(value):
                    self.f64_arrays.add(t.id)
                q = self.qual(value) if value is not None and type(value) in (ast.Name, ast.Attribute) else None
                dyn = self._dynamic_import(value)
                if dyn is not None:
                    self._bind(t.id, dyn)  # a module imported by name is bound like an import of it
                else:
                    self._bind(t.id, q if q and self._interesting(q) else None)
                if value is not None:
                    self._candidate(t.id, value)
                    self._env_candidate(t.id, value)
            elif type(t) is ast.Attribute:
                self.visit(t)
                if value is not None:
                    self._attr_candidate(t.attr, value)
            elif type(t) in (ast.Tuple, ast.List):
                pairs = value.elts if type(value) in (ast.Tuple, ast.List) and len(value.elts) == len(t.elts) else ()
                for k, el in enumerate(t.elts):
                    if type(el) is ast.Name:
                        self._bind(el.id, None)
                        if pairs:
                            self._env_candidate(el.id, pairs[k])
                    else:
                        self.visit(el)
            else:
                self.visit(t)
        if value is not None:
            for hook in self._hooks["on_assign"]:
                hook(self, node, targets, value, False)

    def _env_candidate(self, name: str, value) -> None:
        """A name bound to a string that names an environment variable the rules know."""
        s = _const_str(value)
        if s is not None and "_" in s and s.isupper() and _env_var(s) is not None:
            self.env_candidates.setdefault(name, []).append((value, self.cell))
            self.dynamic_names.add(name)

    def _interesting(self, q: str) -> bool:
        """Whether an alias bound to ``q`` must be followed (its uses may be CUDA references)."""
        root = q.split(".", 1)[0]
        return root in _INTERESTING_ROOTS or root in self.reg.trigger_imports

    def _augassign(self, node: ast.AugAssign) -> None:
        self.visit(node.target)
        self.visit(node.value)
        for hook in self._hooks["on_assign"]:
            hook(self, node, [node.target], node.value, True)

    def _device_nodes(self, expr) -> List[ast.AST]:
        """Sub-expressions of ``expr`` that are CUDA device strings if ``expr`` is a device."""
        t = type(expr)
        s = _const_str(expr)
        if s is not None:
            return [expr] if DEVICE_STR.match(s) else []
        if t is ast.JoinedStr:
            first = expr.values[0] if expr.values else None
            fs = _const_str(first) if first is not None else None
            return [expr] if fs is not None and DEVICE_PREFIX.match(fs) else []
        if t is ast.Call and type(expr.func) is ast.Attribute and expr.func.attr == "format":
            fs = _const_str(expr.func.value)
            return [expr] if fs is not None and DEVICE_PREFIX.match(fs) else []
        if t is ast.BinOp and type(expr.op) in (ast.Mod, ast.Add):
            fs = _const_str(expr.left)
            return [expr] if fs is not None and DEVICE_PREFIX.match(fs) else []
        if t is ast.IfExp:
            return self._device_nodes(expr.body) + self._device_nodes(expr.orelse)
        if t is ast.BoolOp:
            return [n for v in expr.values for n in self._device_nodes(v)]
        if t in (ast.List, ast.Tuple):
            return [n for v in expr.elts for n in self._device_nodes(v)]
        return []

    def _backend_nodes(self, expr) -> List[ast.AST]:
        s = _const_str(expr)
        if s is not None:
            return [expr] if BACKEND_STR.match(s) else []
        if type(expr) is ast.IfExp:
            return self._backend_nodes(expr.body) + self._backend_nodes(expr.orelse)
        if type(expr) is ast.BoolOp:
            return [n for v in expr.values for n in self._backend_nodes(v)]
        return []

    def _candidate(self, name: str, value) -> None:
        nodes = self._device_nodes(value)
        if nodes:
            if _is_device_name(name):
                self._report_devices(nodes)
            else:
                self.dynamic_names.add(name)
                self.candidates.setdefault(("device", self.scopes[-1].idx, name), []).extend(
                    (n, self.cell) for n in nodes)
        bnodes = self._backend_nodes(value)
        if bnodes:
            if _BACKEND_NAME.search(name):
                self._report_backends(bnodes)
            else:
                self.dynamic_names.add(name)
                self.candidates.setdefault(("backend", self.scopes[-1].idx, name), []).extend(
                    (n, self.cell) for n in bnodes)

    def _attr_candidate(self, attr: str, value) -> None:
        nodes = self._device_nodes(value)
        if nodes:
            if _is_device_name(attr):
                self._report_devices(nodes)
            else:
                self.dynamic_names.add(attr)
                self.attr_candidates.setdefault(("device", attr), []).extend((n, self.cell) for n in nodes)
        bnodes = self._backend_nodes(value)
        if bnodes:
            if _BACKEND_NAME.search(attr):
                self._report_backends(bnodes)
            else:
                self.dynamic_names.add(attr)
                self.attr_candidates.setdefault(("backend", attr), []).extend((n, self.cell) for n in bnodes)

    def _return(self, node: ast.Return) -> None:
        if node.value is None:
            return
        self.visit(node.value)
        fname = self._function_names[-1] if self._function_names else ""
        for hook in self._hooks["on_return"]:
            hook(self, node, fname)
        if fname and _is_device_name(fname):
            self._report_devices(self._device_nodes(node.value))

    # ------------------------------------------------------------------ devices and backends
    def _report_devices(self, nodes, rule: str = "device-string") -> None:
        for n in nodes:
            s = _const_str(n)
            if s is not None:
                npu = devices.rewrite_head(s)
                msg = f'"{s}" used as a device'
            else:
                src = self.segment(n)
                s = src or "cuda:N"
                npu = s.replace("cuda", "npu", 1)
                msg = f"CUDA device string built at run time ({s if len(s) < 40 else 'cuda:...'})"
            if rule == "cuda-amp":
                msg += " (autocast / GradScaler device type)"
            if _const_str(n) is not None:
                npu = f'"{npu}"'
            self.report(n, rule, msg, f"use {npu}." if len(npu) < 60 else "use the same expression with npu in place of cuda.")

    def _report_backends(self, nodes) -> None:
        for n in nodes:
            s = _const_str(n) or "nccl"
            self.report(n, "nccl-backend", f'"{s}" used as a distributed backend',
                        f'use "{backends.rewrite(s)}".')

    def device_arg(self, expr, allow_int: bool = False, rule: str = "device-string") -> None:
        """``expr`` is used as a device."""
        t = type(expr)
        if t is ast.Constant:
            v = expr.value
            if allow_int and type(v) is int:
                self.report(expr, "int-device", f"integer device ordinal {v}",
                            f'use torch.device("npu", {v}).')
                return
        if t is ast.Name:
            self._use("device", expr.id)
            q = self._lookup(expr.id)
            if q is not None and q != expr.id and "." in q:
                self.device_uses.add(q)  # another module's name used as a device
            return
        if t is ast.Attribute and type(expr.value) in (ast.Name, ast.Attribute):
            if allow_int and expr.attr in self.int_attrs:
                seg = self.segment(expr) or expr.attr
                self.report(expr, "int-device", f"integer device ordinal {seg} (an int command-line option)",
                            f'use torch.device("npu", {seg}).')
                return
            if self.qual(expr) is None:
                self.attr_uses.add(("device", expr.attr))
            return
        if t is ast.Dict:
            for k in expr.keys:
                if k is not None:
                    self.device_arg(k)
            for v in expr.values:
                self.device_arg(v)
            return
        if t in (ast.List, ast.Tuple):
            for el in expr.elts:
                self.device_arg(el, allow_int=False, rule=rule)
            return
        if t is ast.IfExp:
            self.device_arg(expr.body, allow_int, rule)
            self.device_arg(expr.orelse, allow_int, rule)
            return
        self._report_devices(self._device_nodes(expr), rule)

    def backend_arg(self, expr) -> None:
        if type(expr) is ast.Name:
            self._use("backend", expr.id)
        elif type(expr) is ast.Attribute and self.qual(expr) is None:
            self.attr_uses.add(("backend", expr.attr))
        else:
            self._report_backends(self._backend_nodes(expr))

    def _use(self, kind: str, name: str) -> None:
        self.uses.setdefault((kind, name), set()).add(self.scopes[-1].idx)

    def _project_kind(self, e) -> Optional[str]:
        """"device"/"backend" when ``e`` names another module's constant holding a CUDA device/NCCL string."""
        if self.project is None or type(e) not in (ast.Name, ast.Attribute):
            return None
        q = self.qual(e)
        return self.project.device_consts.get(q) if q is not None else None

    def is_device_expr(self, e) -> bool:
        t = type(e)
        if self.project is not None and self._project_kind(e) == "device":
            return True
        if t is ast.Name:
            return _is_device_name(e.id)
        if t is ast.Attribute:
            return e.attr in ("type", "device", "device_type") or _is_device_name(e.attr)
        if t is ast.Call and type(e.func) is ast.Name and e.func.id in ("str", "repr") and e.args:
            return self.is_device_expr(e.args[0])
        if t is ast.Call and type(e.func) is ast.Attribute and e.func.attr in ("lower", "strip"):
            return self.is_device_expr(e.func.value)
        return False

    def is_backend_expr(self, e) -> bool:
        t = type(e)
        if self.project is not None and self._project_kind(e) == "backend":
            return True
        if t is ast.Name:
            return bool(_BACKEND_NAME.search(e.id))
        if t is ast.Attribute:
            return bool(_BACKEND_NAME.search(e.attr))
        if t is ast.Call:
            f = e.func
            name = f.attr if type(f) is ast.Attribute else f.id if type(f) is ast.Name else ""
            if name == "get_backend":
                return True
            if name in ("str", "lower") :
                return bool(e.args) and self.is_backend_expr(e.args[0]) if name == "str" \
                    else self.is_backend_expr(f.value)
        return False

    # ------------------------------------------------------------------ node handlers
    def _compare(self, node: ast.Compare) -> None:
        operands = [node.left] + list(node.comparators)
        for hook in self._hooks["on_compare"]:
            hook(self, node, operands)
        if len(operands) == 2 and type(node.ops[0]) in (ast.Is, ast.IsNot) \
                and any(type(o) is ast.Constant and o.value is None for o in operands) \
                and any(type(o) is ast.Name and self.is_optional(o) for o in operands):
            return  # ``xops is not None``: whether an optional import worked, no use of it
        for o in operands:
            s = _const_str(o)
            if s is not None:
                self._string(o, s, "compare")
            else:
                self.visit(o)

    def _string(self, node, s: str, role: str) -> None:
        for hook in self.reg.string_hooks[role]:
            hook(self, node, s, role)

    def _subscript(self, node: ast.Subscript) -> None:
        self.visit(node.value)
        sl = node.slice
        if type(sl) is ast.Constant:
            if type(sl.value) is str:
                self._string(sl, sl.value, "key")
        else:
            if type(sl) is ast.Name and type(node.value) in (ast.Name, ast.Attribute) \
                    and self.qual(node.value) == "os.environ":
                self.env_uses.add(sl.id)  # os.environ[key]: the string key holds is a variable's name
            self.visit(sl)

    def _dict(self, node: ast.Dict) -> None:
        for k, v in zip(node.keys, node.values):
            ks = _const_str(k) if k is not None else None
            if ks is not None:
                self._string(k, ks, "key")
                if _is_device_name(ks):
                    self.device_arg(v)
                elif _BACKEND_NAME.search(ks):
                    self.backend_arg(v)
            elif k is not None:
                self.visit(k)
            self.visit(v)

    def _attribute(self, node: ast.Attribute) -> None:
        q = self.qual(node)
        if q is not None:
            c = self.classify(q)
            if c is not None:
                rule, handling, msg, sugg = self._optional_use(node, c)
                self.report(node, rule, msg, sugg, handling)
                return
        for hook in self._hooks["on_attribute"]:
            hook(self, node, q)
        self.visit(node.value)  # unclassified: its base may be (``ProcessGroupNCCL.Options``)

    def _name(self, node: ast.Name) -> None:
        q = self._lookup(node.id)
        if q is not None and q != node.id:
            c = self.classify(q)
            if c is not None:
                rule, handling, msg, sugg = self._optional_use(node, c)
                self.report(node, rule, f"{msg} (imported as {node.id})", sugg, handling)

    def _optional_use(self, node, c):
        """A use of a library name bound from a part its drop-in lacks is manual; a use of a library name bound
        by an optional import runs only where the library is there: a manual use is then partial (the code's
        other branch is the Ascend path)."""
        if c[0] == "cuda-library":
            root = node
            while type(root) is ast.Attribute:
                root = root.value
            if type(root) is ast.Name:
                c = cuda_library.adjust_use(self, root.id, c)
        rule, handling, msg, sugg = c
        if handling == MANUAL and rule == "cuda-library" and self.is_optional(node):
            return rule, PARTIAL, msg + "; optional (bound by an import guarded by except ImportError)", sugg
        return c

    def _call(self, node: ast.Call) -> None:
        func = node.func
        q = self.qual(func) if type(func) in (ast.Attribute, ast.Name) else None
        attr = func.attr if type(func) is ast.Attribute else None
        for hook in self._hooks["on_call"]:
            hook(self, node, q, attr)
        if type(func) is ast.Name and q is None:  # a call of the file's own function (optional paths)
            caller = self._function_names[0] if self._function_names else ""
            self.local_calls.setdefault(func.id, []).append((self.catching, caller, node.lineno))
        mod = self._dynamic_import(node) if q == "importlib.import_module" else None
        if mod is not None and not self._on_import(node, mod):
            self._import_line(node, mod)
        if q in ENV_GETTERS and node.args:
            s = _const_str(node.args[0])
            if s is not None:
                self._string(node.args[0], s, "env")
            elif type(node.args[0]) is ast.Name:
                self.env_uses.add(node.args[0].id)
        if attr == "add_argument" or attr == "add_option":
            self._argparse(node)
        # children
        self.visit(func)
        for a in node.args:
            self.visit(a)
        for kw in node.keywords:
            self.visit(kw.value)

    def numpy_float64(self, call: ast.Call) -> bool:
        """A NumPy array factory call without a dtype: the array is float64."""
        q = self.qual(call.func) if type(call.func) in (ast.Name, ast.Attribute) else None
        return q in _NUMPY_FLOAT64 and not any(k.arg == "dtype" for k in call.keywords)

    def _argparse(self, node: ast.Call) -> None:
        opts = [_const_str(a) or "" for a in node.args]
        opts += [_const_str(k.value) or "" for k in node.keywords if k.arg == "dest"]
        if any(k.arg == "type" and type(k.value) is ast.Name and k.value.id == "int" for k in node.keywords):
            # args.<dest> holds an int: passed to .to() it is a device ordinal
            dests = {o.lstrip("-").replace("-", "_") for o in opts if o.startswith("-")}
            self.int_attrs.update(dests)
            self.dynamic_names.update(dests)  # their uses (.to(args.gpu)) hold no trigger word
        device_opt = any(_is_device_name(o.lstrip("-").replace("-", "_")) for o in opts)
        backend_opt = any(_BACKEND_NAME.search(o) for o in opts)
        for k in node.keywords:
            if k.arg == "default":
                if device_opt:
                    self._report_devices(self._device_nodes(k.value))
                if backend_opt:
                    self._report_backends(self._backend_nodes(k.value))
            elif k.arg == "choices" and backend_opt and type(k.value) in (ast.List, ast.Tuple, ast.Set):
                for el in k.value.elts:
                    s = _const_str(el)
                    if s == "nccl":
                        self.report(el, nccl_backend.RULE.id, 'backend choices allow "nccl" but not "hccl"',
                                    'add "hccl" to the choices')

    # ------------------------------------------------------------------ results
    def finish(self) -> List[Finding]:
        """Resolve deferred device/backend candidates; return the findings sorted by position."""
        used_elsewhere = self.project.used_devices if self.project is not None and self.module_name else ()
        for (kind, sidx, name), nodes in self.candidates.items():
            if sidx == self.module.idx and kind == "device" and f"{self.module_name}.{name}" in used_elsewhere:
                self._report_deferred(kind, nodes)  # another module of the project uses it as a device
                continue
            scopes = self.uses.get((kind, name))
            if not scopes:
                continue
            if any(s == sidx or sidx in self._ancestors(s) for s in scopes):
                self._report_deferred(kind, nodes)
        for (kind, attr), nodes in self.attr_candidates.items():
            if (kind, attr) in self.attr_uses:
                self._report_deferred(kind, nodes)
        for name in self.env_uses & self.env_candidates.keys():
            for node, cell in self.env_candidates[name]:
                self._in_cell(cell)
                self._string(node, node.value, "env")
        for hook in self._hooks["on_finish"]:
            hook(self)
        if self.local_calls and self.module_defs and len(self._cell_texts) == 1:  # (a notebook's lines are per cell)
            fallback.apply(self.findings, self._import_findings, self.local_calls, self.module_defs, self.caught_by,
                           self.full_text)
        self.findings.sort(key=lambda f: (f.cell or 0, f.line, f.col, f.rule))
        return self.findings

    def _report_deferred(self, kind: str, nodes) -> None:
        for node, cell in nodes:
            self._in_cell(cell)
            self._report_devices([node]) if kind == "device" else self._report_backends([node])

    def _ancestors(self, idx: int) -> Tuple[int, ...]:
        return self._anc.get(idx, ())


#: node type -> the PyAnalyzer method that visits it (a class-level table: bound methods stored on the instance
#: made every analyzer a reference cycle that only the garbage collector freed, 0.2 cpu-s on the torch tree)
_DISPATCH = {
    ast.Import: PyAnalyzer._import, ast.ImportFrom: PyAnalyzer._import_from,
    ast.FunctionDef: PyAnalyzer._function, ast.AsyncFunctionDef: PyAnalyzer._function,
    ast.Lambda: PyAnalyzer._lambda, ast.ClassDef: PyAnalyzer._class,
    ast.Assign: PyAnalyzer._assign, ast.AnnAssign: PyAnalyzer._assign,
    ast.Call: PyAnalyzer._call, ast.Attribute: PyAnalyzer._attribute, ast.Name: PyAnalyzer._name,
    ast.Compare: PyAnalyzer._compare, ast.Subscript: PyAnalyzer._subscript, ast.Dict: PyAnalyzer._dict,
    ast.Constant: PyAnalyzer._constant, ast.Return: PyAnalyzer._return, ast.Try: PyAnalyzer._try,
    ast.AugAssign: PyAnalyzer._augassign, ast.If: PyAnalyzer._if, ast.JoinedStr: PyAnalyzer._joined,
    ast.Expr: PyAnalyzer._expr, ast.Global: PyAnalyzer._global,
}
if hasattr(ast, "TryStar"):
    _DISPATCH[ast.TryStar] = PyAnalyzer._try
