"""The rule registry: every module of :mod:`ascend_compat.analysis.rules` that defines ``RULE``.

Adding a rule is adding one module (see :mod:`ascend_compat.analysis.rules.base` for what it may
define); :func:`default` finds it. The registry gathers the rules' hooks by kind, the prefilter's
trigger words (the union of the rules' ``TRIGGERS``) and the rewrites migrate may make.
"""
from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import Dict, List, Optional, Sequence

from ascend_compat.analysis.rules.base import Classified, Rule

#: modules of the package that are not rules (the registry itself and helpers the rules share)
SUPPORT_MODULES = frozenset({"base", "registry", "catalog", "cuda_api"})
STRING_ROLES = ("value", "key", "compare", "env")
_HOOKS = ("qualname", "on_call", "on_attribute", "on_string", "on_joined", "on_compare", "on_import", "on_assign",
          "on_return", "on_def", "on_finish")


class Registry:
    """Rules and their hooks, in rule order (``RULE.order``)."""

    def __init__(self, modules: Sequence):
        mods = sorted(modules, key=lambda m: (m.RULE.order, m.RULE.id))
        ids = [m.RULE.id for m in mods]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ValueError(f"rule ids defined twice: {sorted(dup)}")
        self.modules = {m.RULE.id: m for m in mods}
        self.rules: Dict[str, Rule] = {m.RULE.id: m.RULE for m in mods}
        self.hooks: Dict[str, List] = {h: [getattr(m, h) for m in mods if hasattr(m, h)] for h in _HOOKS}
        #: on_string hooks by role (a rule's STRING_ROLES, default all): most strings are plain values
        self.string_hooks: Dict[str, List] = {
            role: [m.on_string for m in mods
                   if hasattr(m, "on_string") and role in getattr(m, "STRING_ROLES", STRING_ROLES)]
            for role in STRING_ROLES}
        words = {w for m in mods for w in getattr(m, "TRIGGERS", ())}
        self.triggers = tuple(sorted(w for w in words if not any(o != w and o in w for o in words)))
        #: whole-file hooks by file kind (CUDA sources, CMake, C++): ``on_file(path, kind, text)``
        self.file_hooks: Dict[str, List] = {}
        for m in mods:
            for kind in getattr(m, "FILE_KINDS", ()):
                self.file_hooks.setdefault(kind, []).append(m.on_file)
        self.trigger_patterns = tuple(p for m in mods for p in getattr(m, "TRIGGER_PATTERNS", ()))
        #: string-literal prefixes (lower case) by their first character: found right after a quote
        strings: Dict[str, set] = {}
        for m in mods:
            for prefix in getattr(m, "TRIGGER_STRINGS", ()):
                strings.setdefault(prefix[0], set()).add(prefix)
        self.trigger_strings: Dict[str, tuple] = {c: tuple(sorted(ps)) for c, ps in sorted(strings.items())}
        self.trigger_imports = frozenset(n for m in mods for n in getattr(m, "TRIGGER_IMPORTS", ()))
        #: names of classes whose members a rule reports (``ReduceOp``): a name bound to one is followed
        self.followed_members = frozenset(n for m in mods for n in getattr(m, "FOLLOWED_MEMBERS", ()))
        #: modules whose members a rule can report though it has no verdict on the module itself: aliases followed
        self.followed_modules = frozenset(n for m in mods for n in getattr(m, "FOLLOWED_MODULES", ()))
        self.rewrite_string = {i: m.rewrite_string for i, m in self.modules.items() if hasattr(m, "rewrite_string")}
        self.rewrite_qualname = {i: m.rewrite_qualname for i, m in self.modules.items()
                                 if hasattr(m, "rewrite_qualname")}
        self.rewrite_method = {i: m.REWRITE_METHOD for i, m in self.modules.items() if hasattr(m, "REWRITE_METHOD")}
        self.rewrite_attr = {i: m.REWRITE_ATTR for i, m in self.modules.items() if hasattr(m, "REWRITE_ATTR")}
        self.rewrite_import = {i: m.rewrite_import for i, m in self.modules.items() if hasattr(m, "rewrite_import")}
        #: rules some finding of which migrate may rewrite
        self.rewritable = frozenset(set(self.rewrite_string) | set(self.rewrite_qualname) | set(self.rewrite_method)
                                    | set(self.rewrite_attr) | set(self.rewrite_import))
        self._qualname = self.hooks["qualname"]
        self.classify = functools.lru_cache(maxsize=8192)(self._classify)

    def needs_torch_npu(self, rule: str, finding=None) -> bool:
        """Whether code rewritten by ``rule`` (for ``finding``) needs ``import torch_npu``: a rule's
        ``rewrite_needs_torch_npu(finding)`` decides per finding, else its ``REWRITE_NEEDS_TORCH_NPU``."""
        mod = self.modules.get(rule)
        per_finding = getattr(mod, "rewrite_needs_torch_npu", None)
        if per_finding is not None and finding is not None:
            return per_finding(finding)
        return getattr(mod, "REWRITE_NEEDS_TORCH_NPU", True)

    def _classify(self, q: str, version: Optional[str] = None) -> Optional[Classified]:
        """The first rule's verdict on a resolved dotted name, or None."""
        for hook in self._qualname:
            c = hook(q, version)
            if c is not None:
                return c
        return None


def discover() -> list:
    """The rule modules of this package (each must define ``RULE``, helpers are listed in SUPPORT_MODULES)."""
    from ascend_compat.analysis import rules

    out = []
    for info in pkgutil.iter_modules(rules.__path__):
        if info.name in SUPPORT_MODULES or info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{rules.__name__}.{info.name}")
        if not isinstance(getattr(mod, "RULE", None), Rule):
            raise TypeError(f"{mod.__name__} is in the rules package but defines no RULE")
        out.append(mod)
    return out


@functools.lru_cache(maxsize=1)
def default() -> Registry:
    """The registry of every rule module in the package."""
    return Registry(discover())
