"""Make ``import torch_npu`` and torch_npu's distribution metadata resolve to the simulator's stand-in.

:func:`install_stand_in` puts a finder at the front of ``sys.meta_path`` that
- resolves ``torch_npu`` to :mod:`ascend_compat.simulator.torch_npu`, ``torch_npu.npu`` (and
  ``torch_npu.npu.<sub>``) to the simulated ``torch.npu`` modules, and other ``torch_npu.<x>`` to
  ``ascend_compat.simulator.torch_npu.<x>`` when such a module exists;
- answers ``importlib.metadata`` for the distribution ``torch_npu``/``torch-npu`` with the emulated
  version (transformers' ``_is_package_available`` and accelerate's ``find_spec`` check these).
It does not add ``torch_npu`` to ``sys.modules`` until someone imports it, as with a real install.
It also installs torch_npu's DTensor rules for its ops (``torch_npu.distributed.tensor``), which
torch_npu installs at import: at once if ``torch.distributed.tensor`` is loaded, else through an
:class:`AfterImport` hook right after it is (so ``install()`` does not pay for importing DTensor).
The simulator core calls this at the end of ``install()``; calling it again is a no-op.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import pathlib
import re
import sys
import types
from typing import Iterator, Optional

from ascend_compat import _versions

_PKG = "ascend_compat.simulator.torch_npu"
#: stand-in modules whose job belongs to a layer above the simulator: torch_npu name -> module
PROVIDED_ABOVE = {"torch_npu.contrib.transfer_to_npu": "ascend_compat._transfer_to_npu"}
_SUMMARY = "Simulated torch_npu stand-in provided by ascend-compat (no Ascend hardware or CANN involved)"


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def emulated_version(torch_npu_version: Optional[str] = None) -> str:
    """The version string the stand-in reports: the configured one (padded to x.y.z), else the newest table."""
    version = torch_npu_version
    if version is None:
        try:
            from ascend_compat import data

            version = data.npu_api_versions()[-1]
        except Exception:
            version = "2.14"
    release = _versions.release(version)
    if len(release) >= 3:
        return version
    return ".".join(map(str, release + (0,) * (3 - len(release))))


class _StandInDistribution(importlib.metadata.Distribution):
    def __init__(self, version: str):
        self._version = version

    def read_text(self, filename: str) -> Optional[str]:
        if filename == "METADATA":
            return (f"Metadata-Version: 2.1\nName: torch_npu\nVersion: {self._version}\n"
                    f"Summary: {_SUMMARY}\nRequires-Dist: torch\n")
        if filename == "top_level.txt":
            return "torch_npu\n"
        if filename == "INSTALLER":
            return "ascend-compat-simulator\n"
        return None

    def locate_file(self, path) -> pathlib.Path:
        return pathlib.Path(importlib.util.find_spec(_PKG).submodule_search_locations[0]).parent / str(path)


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: types.ModuleType):
        self._target = target

    def create_module(self, spec):
        return self._target

    def exec_module(self, module) -> None:
        return None


class StandInFinder(importlib.abc.MetaPathFinder):
    """Resolves ``torch_npu`` imports and metadata to the simulator's stand-in."""

    def __init__(self, version: str):
        self.version = version

    def _target(self, fullname: str) -> Optional[types.ModuleType]:
        if fullname == "torch_npu":
            return importlib.import_module(_PKG)
        if fullname == "torch_npu.npu" or fullname.startswith("torch_npu.npu."):
            import torch

            if not hasattr(torch, "npu"):
                return None
            return sys.modules.get("torch" + fullname[len("torch_npu"):])
        if fullname in PROVIDED_ABOVE:
            return importlib.import_module(PROVIDED_ABOVE[fullname])
        if fullname.startswith("torch_npu."):
            inner = _PKG + fullname[len("torch_npu"):]
            try:
                if importlib.util.find_spec(inner) is None:
                    return None
            except ModuleNotFoundError:
                return None
            return importlib.import_module(inner)
        return None

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch_npu" and not fullname.startswith("torch_npu."):
            return None
        module = self._target(fullname)
        if module is None:
            return None
        is_pkg = hasattr(module, "__path__") or fullname in ("torch_npu", "torch_npu.npu")
        spec = importlib.util.spec_from_loader(fullname, _AliasLoader(module), is_package=is_pkg)
        spec.origin = getattr(module, "__file__", None) or "ascend-compat simulated torch_npu"
        return spec

    def find_distributions(self, context=None) -> Iterator[importlib.metadata.Distribution]:
        # Only answer for this interpreter's own search path: a query about another location
        # (``distributions(path=[...])``, e.g. a doctor inspecting another tree) must not see us.
        path = getattr(context, "path", sys.path)
        if path is not sys.path and list(path) != list(sys.path):
            return
        name = getattr(context, "name", None)
        if name is None or _normalize(name) == "torch_npu":
            yield _StandInDistribution(self.version)


class _ThenLoader(importlib.abc.Loader):
    """Loads a module with its own loader, then runs ``callback`` (other attributes delegate)."""

    def __init__(self, inner, callback):
        self._inner, self._callback = inner, callback

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module) -> None:
        self._inner.exec_module(module)
        self._callback()

    def __getattr__(self, name):
        return getattr(self._inner, name)


class AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``callback`` once, right after the module ``name`` has been imported, then leaves sys.meta_path."""

    def __init__(self, name: str, callback):
        self.name, self._callback, self._busy = name, callback, False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name or self._busy:
            return None
        self._busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _ThenLoader(spec.loader, self._done)
        return spec

    def _done(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        self._callback()


def _register_dtensor_rules() -> None:
    """torch_npu's DTensor rules for its ops: now if DTensor is imported, else right after it is."""
    import torch

    if not torch.distributed.is_available():
        return
    from ascend_compat.simulator.torch_npu.distributed import tensor as dtensor_rules

    if "torch.distributed.tensor" in sys.modules:
        dtensor_rules.register()
    elif not any(isinstance(f, AfterImport) and f.name == "torch.distributed.tensor" for f in sys.meta_path):
        sys.meta_path.insert(0, AfterImport("torch.distributed.tensor", dtensor_rules.register))


_finder: Optional[StandInFinder] = None


def install_stand_in(torch_npu_version: Optional[str] = None) -> None:
    """Register the ``torch_npu`` finder (idempotent) and set the stand-in's ``__version__``."""
    global _finder
    version = emulated_version(torch_npu_version)
    pkg = importlib.import_module(_PKG)
    pkg.__version__ = version
    pkg._simulated = True
    import torch

    if hasattr(torch, "npu"):
        # ``torch_npu.npu`` is ``torch.npu``, the module built from the package of that name (whose
        # import bound the builder package itself to the attribute)
        pkg.npu = torch.npu
    from ascend_compat import data

    # torch_npu.__all__: the custom ops it exports publicly (its three lazily imported Python names
    # need hardware and are left out, so ``from torch_npu import *`` works)
    ops = pkg._op_names()
    pkg.__all__ = sorted(n for n in data.custom_api(torch_npu_version) if n in ops)
    if _finder is None:
        _finder = StandInFinder(version)
        sys.meta_path.insert(0, _finder)
    else:
        _finder.version = version
    _register_dtensor_rules()
    importlib.invalidate_caches()


def is_stand_in_installed() -> bool:
    return _finder is not None and _finder in sys.meta_path
