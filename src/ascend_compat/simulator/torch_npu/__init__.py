"""The ``torch_npu`` stand-in: what ``import torch_npu`` gives while the simulated NPU is installed.

Laid out like torch_npu: ``npu/`` (``torch_npu.npu`` is ``torch.npu``, built from that package),
``utils/``, ``contrib/``, ``profiler/``, ``optim/``, ``distributed``, ``version``, ``_C``; the CPU
references of torch_npu's custom ops are in ``fused/``.

- ``torch_npu.__version__`` is the emulated torch_npu version; ``torch_npu._simulated`` is True.
- Every custom op of the emulated version is bound as ``torch_npu.<op>`` = ``torch.ops.npu.<op>``
  (registered with torch_npu's schemas by :mod:`._op_registry` at install), as torch_npu binds them.
  So ``hasattr(torch_npu, "npu_x")`` is True for every op the real module has, simulated or not; an op
  without a CPU reference raises ``NotSimulatedError`` (a NotImplementedError) naming it when called.
  Like torch_npu's ops they run for npu (and meta) tensors only: a CPU tensor gets torch's
  "Could not run 'npu::x' with arguments from the 'CPU' backend" NotImplementedError.
- A name torch_npu does not have raises AttributeError.
The import hook that maps ``torch_npu`` to this package is in ``ascend_compat.simulator._stand_in``.
Importing this package has no side effect.
"""
from __future__ import annotations

from typing import Any

__version__ = "2.14.0"  # replaced by install_stand_in() with the emulated version
_simulated = True

#: torch_npu's own top-level names (its ``__all__`` without the exported ops); set at install
__all__ = ["HiFloat8Tensor", "erase_stream", "matmul_checksum"]


_SUBMODULES = ("profiler", "optim", "utils", "version", "contrib", "distributed", "_C")


def _not_installed(what: str) -> AttributeError:
    return AttributeError(f"{what} is unavailable: the ascend-compat simulated NPU is not installed in this process "
                          "(call ascend_compat.simulator.install() first)")


def __getattr__(name: str) -> Any:
    import torch

    if name.startswith("__") or name == "_op_registry":  # dunders; the registry while it is being imported
        raise AttributeError(f"module 'torch_npu' has no attribute '{name}'")
    if name == "npu":
        if not hasattr(torch, "npu"):
            raise _not_installed("torch_npu.npu")
        return torch.npu
    if name in _SUBMODULES:  # torch_npu imports these with itself; here they load on first use
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    from ascend_compat.simulator.torch_npu import _op_registry

    if name in _op_registry.op_names():
        return getattr(torch.ops.npu, name)
    if name in ("HiFloat8Tensor", "erase_stream", "matmul_checksum"):
        raise AttributeError(f"torch_npu.{name} is not simulated by ascend-compat (it needs Ascend hardware)")
    if not _op_registry.op_names() and (name.startswith("npu_") or name.startswith("_npu_")):
        raise _not_installed(f"torch_npu.{name}")
    raise AttributeError(f"module 'torch_npu' has no attribute '{name}'")


def __dir__():
    from ascend_compat.simulator.torch_npu import _op_registry

    return sorted(set(globals()) | set(_op_registry.op_names()))


def _op_names():
    from ascend_compat.simulator.torch_npu import _op_registry

    return _op_registry.op_names()
