"""Virtual ``flash_attn`` / ``apex`` / ``xformers`` / ``bitsandbytes`` modules backed by our implementations.

While the drop-ins are installed (the shim installs them when it activates on an NPU, through
:class:`DropInModules`; :func:`install` does it by hand), a ``sys.meta_path`` finder placed *after*
the normal finders answers imports of these packages when the real package is not installed:

* ``import flash_attn``, ``from flash_attn.bert_padding import pad_input``, ``import apex``,
  ``from apex import amp``, ``import xformers.ops`` ... give fresh module objects whose public names
  are those of the implementation module (``ascend_compat.ecosystem.<x>``), which stays importable
  directly. Each carries ``__ascend_compat_dropin__`` naming that module.
* A submodule we do not provide (``flash_attn.layers.rotary``, ``apex.contrib``) raises
  ``ModuleNotFoundError`` saying what the drop-in provides and what to use instead.
* ``importlib.metadata.version("flash_attn")`` answers the emulated version (``2.7.4``) through
  :meth:`_Finder.find_distributions`; the distribution's ``Summary`` says it is ascend-compat's
  drop-in. bitsandbytes deliberately has no distribution metadata, so libraries that gate 8-bit/4-bit
  quantization on it (transformers, peft) keep reporting it as unavailable.

A real installed package always wins: a family whose top-level package the other finders can
locate at install time is skipped, and the finder sits behind them anyway.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import re
import sys
import threading
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ascend_compat.cuda_shim.registry import Change
from ascend_compat.knowledge import libraries

__all__ = ["DROPINS", "DropIn", "DropInModules", "changes", "install", "uninstall", "installed"]

_IMPL = "ascend_compat.ecosystem.dropins"


@dataclass(frozen=True)
class DropIn:
    """One emulated package family: virtual module name -> implementation module, plus metadata."""

    top: str
    modules: dict
    version: str | None  # None: no distribution metadata (see bitsandbytes in the module docstring)
    hint: str = ""
    extra: dict = field(default_factory=dict)

    def missing(self, fullname: str) -> ModuleNotFoundError:
        provided = ", ".join(sorted(self.modules))
        return ModuleNotFoundError(
            f"No module named {fullname!r}: the real {self.top} is not installed here, and ascend-compat's "
            f"Ascend drop-in for it provides only {provided}. {self.hint}".rstrip(), name=fullname)


def _provides(top: str) -> dict:
    """The modules the drop-in for ``top`` answers (the knowledge layer's support matrix)."""
    return dict(libraries.BY_NAME[top].provides)


DROPINS = (
    DropIn(
        "flash_attn",
        _provides("flash_attn"),
        "2.7.4",
        "flash-attn's other CUDA/Triton layers and ops (fused layernorm/RMSNorm, cross-entropy, fused MLP) have no "
        "Ascend build: use torch.nn.LayerNorm / torch_npu.npu_rms_norm / torch.nn.functional.cross_entropy or the "
        "model's eager implementation.",
    ),
    DropIn(
        "apex",
        _provides("apex"),
        "0.1",
        "Replace other apex parts with torch equivalents (torch.amp, torch.optim, torch.nn.parallel).",
    ),
    DropIn(
        "xformers",
        _provides("xformers"),
        "0.0.29",
        "Other xformers components have no Ascend build: use torch.nn.functional.scaled_dot_product_attention.",
    ),
    DropIn(
        "bitsandbytes",
        _provides("bitsandbytes"),
        None,
    ),
)

_LOCK = threading.RLock()
_NORMALIZE = re.compile(r"[-_.]+")


def _normalize(name: str) -> str:
    return _NORMALIZE.sub("_", name).lower()


class _Distribution(importlib.metadata.Distribution):
    """Package metadata for an emulated package (name, version, a Summary naming ascend-compat)."""

    def __init__(self, dropin: DropIn) -> None:
        self._dropin = dropin

    def read_text(self, filename):  # noqa: D401 - importlib.metadata protocol
        if filename in ("METADATA", "PKG-INFO"):
            d = self._dropin
            return (f"Metadata-Version: 2.1\nName: {d.top}\nVersion: {d.version}\n"
                    f"Summary: ascend-compat drop-in emulating {d.top} {d.version} on Ascend NPU "
                    f"(implemented by {d.modules[d.top]})\n")
        if filename == "top_level.txt":
            return self._dropin.top + "\n"
        return None

    def locate_file(self, path):
        top = importlib.import_module(self._dropin.modules[self._dropin.top].partition(":")[0])
        return Path(top.__file__).parent / str(path)


class _Loader(importlib.abc.Loader):
    def __init__(self, dropin: DropIn, impl: str) -> None:
        self.dropin = dropin
        self.impl = impl

    def create_module(self, spec):
        return None  # default module creation

    def exec_module(self, module: types.ModuleType) -> None:
        impl = _implementation(self.impl)
        names = getattr(impl, "__all__", None) or [n for n in vars(impl) if not n.startswith("_")]
        for name in names:
            if f"{module.__name__}.{name}" in self.dropin.modules:
                continue  # a virtual submodule: imported on first attribute access (_forwarder)
            setattr(module, name, getattr(impl, name))
        module.__all__ = list(names)
        module.__doc__ = impl.__doc__
        module.__file__ = (getattr(impl, "__file__", None)
                           or getattr(sys.modules.get(getattr(impl, "__module__", "")), "__file__", None))
        module.__ascend_compat_dropin__ = self.impl
        if module.__name__ == self.dropin.top and self.dropin.version:
            module.__version__ = self.dropin.version
        module.__getattr__ = _forwarder(module.__name__, impl, self.dropin)


def _implementation(spec: str):
    """``"pkg.module"`` -> the module; ``"pkg.module:Namespace"`` -> that attribute (a namespace class)."""
    if not spec:  # a package level that only holds submodules
        return types.ModuleType("ascend_compat.ecosystem._empty", "Namespace package of the drop-in.")
    module_name, _, attr = spec.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


def _forwarder(name: str, impl: types.ModuleType, dropin: DropIn):
    """Module ``__getattr__``: known virtual submodules import on attribute access (as the real
    packages import them in ``__init__``); other names come from the implementation module."""

    def __getattr__(attr: str):
        sub = f"{name}.{attr}"
        if sub in dropin.modules:
            return importlib.import_module(sub)
        try:
            return getattr(impl, attr)
        except AttributeError:
            if "__getattr__" in vars(impl):  # the implementation explains its own missing names
                raise
            raise AttributeError(f"module {name!r} (ascend-compat drop-in) has no attribute {attr!r}") from None

    return __getattr__


class _Finder(importlib.abc.MetaPathFinder):
    """Serves the enabled drop-in families; see the module docstring."""

    def __init__(self) -> None:
        self.enabled: dict[str, DropIn] = {}

    def find_spec(self, fullname, path, target=None):
        dropin = self.enabled.get(fullname.partition(".")[0])
        if dropin is None:
            return None
        impl = dropin.modules.get(fullname)
        if impl is None:
            raise dropin.missing(fullname)
        is_pkg = any(m.startswith(fullname + ".") for m in dropin.modules)
        spec = importlib.machinery.ModuleSpec(fullname, _Loader(dropin, impl), is_package=is_pkg)
        if is_pkg:
            spec.submodule_search_locations = []
        return spec

    def find_distributions(self, context=importlib.metadata.DistributionFinder.Context()) -> Iterator:
        wanted = getattr(context, "name", None)
        for dropin in self.enabled.values():
            if dropin.version is None:
                continue
            if wanted is None or _normalize(wanted) == _normalize(dropin.top):
                yield _Distribution(dropin)


_FINDER = _Finder()


def _is_dropin(module) -> bool:
    """Whether ``module`` is one of our virtual modules, read from its own namespace: never through
    getattr, which calls a module ``__getattr__`` that may raise, or create the name (torch.ops does)."""
    return isinstance(module, types.ModuleType) and "__ascend_compat_dropin__" in module.__dict__


def _real_package_present(top: str) -> bool:
    """True when a finder other than ours can locate ``top`` (imports nothing)."""
    module = sys.modules.get(top)
    if module is not None:
        return not _is_dropin(module)
    for finder in sys.meta_path:
        if finder is _FINDER or not hasattr(finder, "find_spec"):
            continue
        try:
            if finder.find_spec(top, None) is not None:
                return True
        except (ImportError, ValueError):
            continue
    return False


def install(only=None) -> list:
    """Enable the drop-in families (all, or the top-level names in ``only``) whose real package is
    not installed; returns the names enabled by this call. Idempotent."""
    with _LOCK:
        new = []
        for dropin in DROPINS:
            if only is not None and dropin.top not in only:
                continue
            if dropin.top in _FINDER.enabled or _real_package_present(dropin.top):
                continue
            _FINDER.enabled[dropin.top] = dropin
            new.append(dropin.top)
        if _FINDER.enabled and _FINDER not in sys.meta_path:
            sys.meta_path.append(_FINDER)
        importlib.invalidate_caches()
        return new


def uninstall(only=None) -> None:
    """Stop serving the drop-in families (all, or the top-level names in ``only``) and forget their
    virtual modules already imported; the finder leaves ``sys.meta_path`` once none is served."""
    with _LOCK:
        tops = set(_FINDER.enabled) if only is None else set(only) & set(_FINDER.enabled)
        for top in tops:
            del _FINDER.enabled[top]
        if not _FINDER.enabled:
            try:
                sys.meta_path.remove(_FINDER)
            except ValueError:
                pass
        for name, module in list(sys.modules.items()):
            if name.partition(".")[0] in tops and _is_dropin(module):
                del sys.modules[name]


def installed() -> list:
    """Top-level names of the drop-in families currently served."""
    return sorted(_FINDER.enabled)


class DropInModules(Change):
    """Registry change: install the drop-ins on activation, remove them on deactivation."""

    name = "ecosystem drop-in modules (flash_attn, apex, xformers, bitsandbytes)"
    reason = ("flash-attn, apex, xformers and bitsandbytes have no Ascend builds; imports of them resolve to "
              "ascend-compat's NPU implementations when the real package is not installed")
    applies_to = ""
    concept = "ecosystem"

    def __init__(self, only=None) -> None:
        self.only = None if only is None else tuple(only)
        self.enabled: list = []

    def apply(self) -> bool:
        # Families already served (an explicit install() before activation) are not re-enabled and
        # stay installed after deactivation: only what this change enabled is its to remove.
        self.enabled = install(self.only)
        return bool(self.enabled)

    def revert(self) -> None:
        uninstall(self.enabled)


def changes(only=None) -> list:
    """What the shim applies for the ecosystem drop-ins (for ``cuda_shim.patches`` ``ORDER``):
    all families, or the top-level names in ``only``."""
    return [DropInModules(only)]
