"""The first import paths of the ecosystem modules, kept working after the split into
:mod:`ascend_compat.ecosystem.dropins` and :mod:`ascend_compat.ecosystem.integrations`.

``import ascend_compat.ecosystem.flash_attn`` (or ``.flash_attn.interface``, ``.lightning`` ...)
returns the moved module object itself, so there is one module and one state, whichever path
imported it.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys

_OLD = "ascend_compat.ecosystem."
MOVED = {
    "flash_attn": "ascend_compat.ecosystem.dropins.flash_attn",
    "apex": "ascend_compat.ecosystem.dropins.apex",
    "xformers": "ascend_compat.ecosystem.dropins.xformers",
    "bitsandbytes": "ascend_compat.ecosystem.dropins.bitsandbytes",
    "transformers_patch": "ascend_compat.ecosystem.integrations.transformers_patch",
    "accelerate_patch": "ascend_compat.ecosystem.integrations.accelerate_patch",
    "deepspeed_patch": "ascend_compat.ecosystem.integrations.deepspeed_patch",
    "lightning": "ascend_compat.ecosystem.integrations.lightning",
}


def new_name(fullname: str) -> str | None:
    """The moved module's name for an old ``ascend_compat.ecosystem.<name>[.sub]`` path, else None."""
    if not fullname.startswith(_OLD):
        return None
    head, _, rest = fullname[len(_OLD):].partition(".")
    target = MOVED.get(head)
    if target is None:
        return None
    return f"{target}.{rest}" if rest else target


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers old names with the moved module; first on ``sys.meta_path`` so that a submodule of a
    moved package is never loaded a second time from the package's ``__path__`` under its old name."""

    def find_spec(self, fullname, path=None, target=None):
        name = new_name(fullname)
        if name is None:
            return None
        module = importlib.import_module(name)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=hasattr(module, "__path__"),
                                              loader_state=(module, module.__spec__))

    def create_module(self, spec):
        return spec.loader_state[0]

    def exec_module(self, module):
        # the import system stamped the alias spec on the module: give it back its own
        module.__spec__ = module.__spec__.loader_state[1]


_FINDER = _Alias()


def install() -> None:
    """Put the alias finder on ``sys.meta_path`` (once)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
