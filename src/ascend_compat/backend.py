"""Which NPU backend (if any) ascend-compat translates CUDA calls to.

Probes are small, pure and cached: they look, they never install or initialise anything.
The one decision lives in :func:`target_backend`:

* ``"simulator"`` when :mod:`ascend_compat.simulator` has been installed in this process;
* ``"torch_npu"`` when the real ``torch_npu`` package is installed (found on ``sys.path``);
* ``None`` otherwise: there is nothing to translate to, and ascend-compat changes nothing.
"""
from __future__ import annotations

import functools
import importlib.util
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # packaging is read only when a version is asked for (not by `import ascend_compat`)
    from packaging.version import Version

__all__ = [
    "simulator_installed",
    "target_backend",
    "torch_npu_installed",
    "torch_npu_version",
    "torch_version",
]


def simulator_installed() -> bool:
    """True when the simulated NPU is installed in this process (never imports the simulator)."""
    sim = sys.modules.get("ascend_compat.simulator")
    return bool(sim is not None and sim.is_installed())


@functools.lru_cache(maxsize=1)
def torch_npu_installed() -> bool:
    """True when a real ``torch_npu`` distribution is importable (not the simulator's stand-in)."""
    if simulator_installed():
        return False
    module = sys.modules.get("torch_npu")
    if module is not None:
        return not getattr(module, "__ascend_compat_simulated__", False)
    try:
        return importlib.util.find_spec("torch_npu") is not None
    except (ImportError, ValueError):
        return False


def target_backend() -> str | None:
    """``"simulator"``, ``"torch_npu"`` or ``None`` (see the module docstring)."""
    if simulator_installed():
        return "simulator"
    if torch_npu_installed():
        return "torch_npu"
    return None


@functools.lru_cache(maxsize=1)
def torch_version() -> Version:
    """The installed torch version (imports torch, which every caller already has)."""
    import torch

    from ascend_compat import _versions

    return _versions.parse(torch.__version__)


def torch_npu_version() -> Version | None:
    """Version of the torch_npu we translate to: the real one, or the one the simulator emulates."""
    module = sys.modules.get("torch_npu")
    if module is None:
        return None
    text = getattr(module, "__version__", None)
    from ascend_compat import _versions

    return _versions.parse(str(text)) if text else None
