"""Run a callback right after a named module is imported, without importing it ourselves.

One finder sits at the front of ``sys.meta_path`` while anything is watched. For a watched name it
asks the other finders for the spec and wraps the loader's ``exec_module`` so the callback runs
once the module body has executed. Unwatched imports pay one dict lookup.
"""
from __future__ import annotations

import importlib.abc
import sys
import threading
from typing import Callable, Iterable

_CALLBACKS: dict[str, Callable[[str], None]] = {}
_LOCAL = threading.local()


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):  # noqa: D401 - importlib protocol
        callback = _CALLBACKS.get(fullname)
        if callback is None or getattr(_LOCAL, "busy", False):
            return None
        _LOCAL.busy = True
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            _LOCAL.busy = False
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original_exec = loader.exec_module

        def exec_module(module):
            original_exec(module)
            cb = _CALLBACKS.pop(fullname, None)
            if cb is not None:
                cb(fullname)

        try:
            loader.exec_module = exec_module
        except AttributeError:
            return spec
        return spec


_FINDER = _Finder()


def watch(names: Iterable[str], callback: Callable[[str], None]) -> None:
    """Call ``callback(name)`` after each of ``names`` is imported (at once if it already is)."""
    now = []
    for name in names:
        if name in sys.modules:
            now.append(name)
        else:
            _CALLBACKS[name] = callback
    if _CALLBACKS and _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    for name in now:
        callback(name)


def unwatch() -> None:
    """Forget every callback and remove the finder."""
    _CALLBACKS.clear()
    try:
        sys.meta_path.remove(_FINDER)
    except ValueError:
        pass
