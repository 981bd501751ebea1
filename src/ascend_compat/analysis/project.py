"""Project-wide facts: what one module of the checked files tells ``check`` about the others.

A file alone does not show that ``fused_kernels.load(args)`` builds CUDA code, that ``SYSTEM`` (imported
from another module) holds ``"cuda"``, that ``import _nvdiffrast_c`` loads a CUDA extension ``setup.py``
declares, or that ``get_plugin(name, sources, **kw)`` hands its callers' ``.cu`` files to
``cpp_extension.load``. So ``check`` analyses in two passes (:func:`ascend_compat.analysis.scan.scan_targets`):

1. every file as usual; each analysed file also yields its :class:`FileFacts` (what it defines that matters
   elsewhere, and what it asks of other modules), cached with its findings;
2. the facts of all files form :class:`ProjectFacts`; the files they can change are analysed again with them:
   a file whose import lines name a module (or symbol) that carries a fact, and a file whose own
   definitions are given meaning by another's use (a loader its callers feed CUDA sources, a module constant
   another module uses as a device). New facts from the second pass start another round (at most
   :data:`MAX_ROUNDS`).

Soundness of the prefilter: a file skipped in pass 1 (no trigger word) can only be changed by importing a
module that carries a fact, and its import lines name that module; :class:`FileFacts` of a skipped file holds
those words (``imports``), so it is re-checked exactly when that can matter, and its analysis then treats the
fact symbols as trigger words.

Module names come from the file system as Python would see them: the dotted path below the first
directory without ``__init__.py`` (:func:`module_name`).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Optional, Set

#: rounds of re-analysis with growing facts (a helper that calls a helper that builds CUDA code, ...)
MAX_ROUNDS = 3


@functools.lru_cache(maxsize=4096)
def _is_package(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "__init__.py"))


def module_name(path: str) -> str:
    """The dotted module name of a Python file: its path below the first directory that is no package."""
    path = os.path.abspath(path)
    directory, base = os.path.split(path)
    stem = os.path.splitext(base)[0]
    parts = [] if stem == "__init__" else [stem]
    while directory and _is_package(directory):
        directory, pkg = os.path.split(directory)
        parts.append(pkg)
    parts.reverse()
    return ".".join(parts) or stem


@dataclass
class FileFacts:
    """What one file defines that matters to other modules, and what it asks of them.

    Names defined here are module-level, relative to ``module``; ``cuda_calls`` and ``device_uses`` hold
    absolute dotted names of other modules' symbols.
    """

    module: str = ""
    #: functions whose body builds CUDA code or CUDA compile flags -> line
    builders: Dict[str, int] = field(default_factory=dict)
    #: functions that hand their parameters to cpp_extension.load / load_inline without CUDA evidence -> line
    forwarders: Dict[str, int] = field(default_factory=dict)
    #: dotted names of the extension modules this file builds from CUDA sources (setup.py, load(name=...))
    ext_modules: Set[str] = field(default_factory=set)
    #: module constants bound to a CUDA device ("device") or NCCL backend ("backend") string
    device_consts: Dict[str, str] = field(default_factory=dict)
    #: Triton kernels defined here
    kernels: Set[str] = field(default_factory=set)
    #: functions (no kernels themselves) whose body launches or defines a Triton kernel -> line
    launchers: Dict[str, int] = field(default_factory=dict)
    #: functions returning a CUDA toolkit version or capability -> "toolkit" / "capability"
    version_funcs: Dict[str, str] = field(default_factory=dict)
    #: other modules' functions this file calls with CUDA sources or nvcc flags
    cuda_calls: Set[str] = field(default_factory=set)
    #: other modules' names this file uses as a device
    device_uses: Set[str] = field(default_factory=set)
    #: what this file's imports bind, as absolute names: modules (``import a.b``, ``from a import *``) and
    #: modules' members (``from a.b import c`` -> ``a.b.c``): where facts can reach it from
    imports: FrozenSet[str] = frozenset()
    #: the names this file's analysis followed as trigger words (bound to CUDA-relevant values): a later pass
    #: over the file starts from them instead of finding them again round by round (only its speed depends on it)
    followed: FrozenSet[str] = frozenset()

    def defines(self) -> bool:
        return bool(self.builders or self.forwarders or self.ext_modules or self.device_consts or self.kernels
                    or self.launchers or self.version_funcs)

    def to_dict(self) -> dict:
        return {"module": self.module, "builders": self.builders, "forwarders": self.forwarders,
                "ext_modules": sorted(self.ext_modules), "device_consts": self.device_consts,
                "kernels": sorted(self.kernels), "launchers": self.launchers, "version_funcs": self.version_funcs,
                "cuda_calls": sorted(self.cuda_calls), "device_uses": sorted(self.device_uses),
                "imports": sorted(self.imports), "followed": sorted(self.followed)}

    @classmethod
    def from_dict(cls, d: dict) -> "FileFacts":
        return cls(d["module"], dict(d["builders"]), dict(d["forwarders"]), set(d["ext_modules"]),
                   dict(d["device_consts"]), set(d["kernels"]), dict(d["launchers"]), dict(d["version_funcs"]),
                   set(d["cuda_calls"]), set(d["device_uses"]), frozenset(d["imports"]), frozenset(d["followed"]))


def facts_of(analyzer, module: str, imports: Iterable[str]) -> FileFacts:
    """The facts an analysed file yields (read from its analyzer after :meth:`PyAnalyzer.finish`)."""
    from ascend_compat.analysis.rules import cuda_extension, cuda_version_gate, triton_kernel

    f = FileFacts(module=module, imports=frozenset(imports), followed=frozenset(analyzer.dynamic_names))
    spans = analyzer.module_defs  # name -> (first, last) line of module-level functions
    building = [x.line for x in analyzer.findings if x.rule in ("cuda-extension", "cuda-source")]
    for name, (lo, hi) in spans.items():
        if any(lo <= ln <= hi for ln in building):
            f.builders[name] = lo
    st = analyzer.state
    f.forwarders = {n: ln for n, ln in st.get(cuda_extension.FORWARDERS, {}).items() if n in spans}
    f.ext_modules = set(st.get(cuda_extension.EXT_MODULES, ()))
    f.cuda_calls = set(st.get(cuda_extension.CUDA_CALLS, ()))
    f.kernels = {k for k in triton_kernel.kernels(analyzer) if k in spans}
    launching = triton_kernel.launch_lines(analyzer)
    f.launchers = {name: lo for name, (lo, hi) in spans.items()
                   if name not in f.kernels and any(lo <= ln <= hi for ln in launching)}
    funcs = (st.get(cuda_version_gate.RULE.id) or {}).get("funcs", {})
    f.version_funcs = {n: k for n, k in funcs.items() if n in spans}
    f.device_consts = {name: kind for (kind, sidx, name) in analyzer.candidates
                       if sidx == analyzer.module.idx and not name.startswith("__")}
    f.device_uses = set(analyzer.device_uses)
    return f


class ProjectFacts:
    """The facts of all checked files, by absolute dotted name; what the second pass reads."""

    def __init__(self, facts: Iterable[FileFacts]):
        facts = [f for f in facts if f is not None]
        self.builders: Dict[str, str] = {}
        self.ext_modules: Set[str] = set()
        self.device_consts: Dict[str, str] = {}
        self.kernels: Set[str] = set()
        #: functions that launch or build Triton kernels -> their place ("module:line")
        self.launchers: Dict[str, str] = {}
        self.version_funcs: Dict[str, str] = {}
        forwarders: Dict[str, str] = {}
        for f in facts:
            for name, line in f.builders.items():
                self.builders[f"{f.module}.{name}"] = f"{f.module}:{line}"
            for name, line in f.forwarders.items():
                forwarders[f"{f.module}.{name}"] = f"{f.module}:{line}"
            self.ext_modules |= f.ext_modules
            self.device_consts.update({f"{f.module}.{n}": k for n, k in f.device_consts.items()})
            self.kernels |= {f"{f.module}.{k}" for k in f.kernels}
            self.launchers.update({f"{f.module}.{n}": f"{f.module}:{ln}" for n, ln in f.launchers.items()})
            self.version_funcs.update({f"{f.module}.{n}": k for n, k in f.version_funcs.items()})
        calls = {q for f in facts for q in f.cuda_calls}
        uses = {q for f in facts for q in f.device_uses}
        #: loaders whose callers in the project hand them CUDA sources or nvcc flags -> the loader's place
        self.cuda_forwarders: Dict[str, str] = {q: where for q, where in forwarders.items() if q in calls}
        #: module constants holding a CUDA device string that another module uses as a device
        self.used_devices: Set[str] = {q for q in uses if self.device_consts.get(q) == "device"}
        self._words = self._make_words()
        symbols = set(self.builders) | set(self.device_consts) | self.kernels | set(self.launchers) \
            | set(self.version_funcs)
        self._symbols = frozenset(symbols)
        #: the names an import must bind for a forward fact to reach the importing file
        self._reach: FrozenSet[str] = frozenset(symbols | {q.rpartition(".")[0] for q in symbols} | self.ext_modules)
        self._by_module: Dict[str, Set[str]] = {}
        for q in symbols:
            module, _, name = q.rpartition(".")
            self._by_module.setdefault(module, set()).add(name)
        self._names = {q: q.rpartition(".")[2] for q in symbols | self.ext_modules}

    def _make_words(self) -> FrozenSet[str]:
        words: Set[str] = set()
        for q in list(self.builders) + list(self.device_consts) + list(self.kernels) + list(self.launchers) \
                + list(self.version_funcs):
            module, _, name = q.rpartition(".")
            words.add(name)
            if module:
                words.add(module.rpartition(".")[2])
        for m in self.ext_modules:
            words.add(m.rpartition(".")[2])
        return frozenset(w for w in words if w)

    @property
    def symbols(self) -> FrozenSet[str]:
        """The absolute names of the symbols that carry a fact (``pkg.build.load_ops``)."""
        return self._symbols

    @property
    def words(self) -> FrozenSet[str]:
        """Identifiers a file must contain for the forward facts to reach it (the fact symbols, their modules)."""
        return self._words

    def __bool__(self) -> bool:
        return bool(self.builders or self.ext_modules or self.device_consts or self.kernels or self.launchers
                    or self.version_funcs)

    def reachable(self, imports: Iterable[str]) -> Set[str]:
        """The fact symbols' names a file with these imports can use (it must name one for a fact to matter)."""
        out: Set[str] = set()
        for q in imports:
            name = self._names.get(q)
            if name:
                out.add(name)
            names = self._by_module.get(q)
            if names:
                out |= names
                if q in self.triton_modules:  # the import of a Triton module is itself reported
                    out.add(q.rpartition(".")[2])
        return out

    @functools.cached_property
    def triton_modules(self) -> FrozenSet[str]:
        """Modules of the project that define, launch or build Triton kernels."""
        return frozenset(q.rpartition(".")[0] for q in self.kernels | set(self.launchers))

    @functools.cached_property
    def _back(self) -> FrozenSet[str]:
        return frozenset(q.rpartition(".")[0] for q in list(self.cuda_forwarders) + list(self.used_devices))

    def back_modules(self) -> FrozenSet[str]:
        """Modules whose own definitions other modules give a meaning (they are analysed again)."""
        return self._back

    def affects(self, f: Optional[FileFacts]) -> bool:
        """Whether the facts can change the findings of the file with facts ``f``."""
        if f is None:
            return False
        return bool(f.imports & self._reach) or f.module in self.back_modules()

    def changed_since(self, earlier: "ProjectFacts") -> "Optional[tuple]":
        """(names an import must bind, modules analysed again) for the facts that are new since ``earlier``."""
        new = self._symbols - earlier._symbols
        reach = new | {q.rpartition(".")[0] for q in new} | (self.ext_modules - earlier.ext_modules)
        new_back = self.back_modules() - earlier.back_modules()
        return frozenset(reach), frozenset(new_back)

    def affected_by_change(self, f: Optional[FileFacts], change) -> bool:
        """Whether the file with facts ``f`` can see one of the facts :meth:`changed_since` found."""
        if f is None:
            return False
        reach, back = change
        return bool(f.imports & reach) or f.module in back

    def digest(self) -> str:
        """A hash of everything the second pass reads (for the result cache)."""
        doc = [sorted(self.builders.items()), sorted(self.ext_modules), sorted(self.device_consts.items()),
               sorted(self.kernels), sorted(self.launchers.items()), sorted(self.version_funcs.items()),
               sorted(self.cuda_forwarders.items()),
               sorted(self.used_devices)]
        return hashlib.blake2b(json.dumps(doc).encode(), digest_size=12).hexdigest()

    def same_as(self, other: "ProjectFacts") -> bool:
        return self.digest() == other.digest()


def resolve_relative(module: str, is_package: bool, level: int, name: Optional[str]) -> Optional[str]:
    """The absolute module of ``from <level dots><name> import ...`` written in ``module``."""
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    base = parts[:len(parts) - (level - 1)]
    if name:
        base += name.split(".")
    return ".".join(base) or None


_FROM = re.compile(r"[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]*\(?([^)#]*)")
_IMPORT = re.compile(r"[ \t]*import[ \t]+([^#;]*)")


def import_targets(text: str, positions: List[int], module: str, is_package: bool) -> FrozenSet[str]:
    """What the import statements starting at ``positions`` bind, as absolute names (see :attr:`FileFacts.imports`),
    read with regular expressions: the file need not be parsed (a file the prefilter skips is linked too)."""
    return frozenset(q for q, _ in import_bindings(text, positions, module, is_package))


def import_bindings(text: str, positions: List[int], module: Optional[str], is_package: bool) -> Set[tuple]:
    """(absolute name, the local name it is bound to) of each import at ``positions`` (``*``: the module, ``*``);
    relative imports are resolved against ``module`` (skipped without one)."""
    out: Set[tuple] = set()
    for p in positions:
        end = text.find("\n", p)
        line = text[p:end if end != -1 else len(text)]
        if "(" in line and ")" not in line:  # a parenthesised statement over several lines
            close = text.find(")", p)
            line = text[p:close if close != -1 else len(text)].replace("\\\n", " ").replace("\n", " ")
        while line.rstrip().endswith("\\") and end != -1:  # backslash continuations
            nxt = text.find("\n", end + 1)
            line = line.rstrip()[:-1] + " " + text[end + 1:nxt if nxt != -1 else len(text)]
            end = nxt
        m = _FROM.match(line)
        if m is not None:
            dots, name, names = m.groups()
            base = (resolve_relative(module, is_package, len(dots), name) if module else None) if dots else name
            if not base:
                continue
            for part in names.split(","):
                words = part.replace("(", " ").replace(")", " ").split()
                if not words:
                    continue
                if words[0] == "*":
                    out.add((base, "*"))
                else:
                    out.add((f"{base}.{words[0]}", words[2] if len(words) > 2 and words[1] == "as" else words[0]))
            continue
        m = _IMPORT.match(line)
        if m is not None:
            for part in m.group(1).split(","):
                words = part.split()
                if words:
                    out.add((words[0], words[2] if len(words) > 2 and words[1] == "as" else words[0].split(".")[0]))
    return out
