"""Lazy public names for a package: ``__getattr__`` / ``__dir__`` that import a name's module only
when the name is first used, so importing the package stays cheap."""
from __future__ import annotations

import importlib
from typing import Callable, Dict, List, Tuple


def lazy_exports(package: str, exports: Dict[str, str], namespace: dict) -> Tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps a public name to the module that
    defines it; a resolved name is cached in the package's ``namespace`` (its globals)."""

    def __getattr__(name: str):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> List[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
