"""The ``torch_npu`` stand-in: what ``import torch_npu`` gives while the simulated NPU is installed.

- ``torch_npu.npu`` is ``torch.npu`` (the simulated device module).
- ``torch_npu.__version__`` is the emulated torch_npu version; ``torch_npu._simulated`` is True.
- The fused ops (``npu_fusion_attention``, ``npu_rms_norm``, ``npu_rotary_mul``, ``npu_swiglu``, ...)
  are exact CPU references from :mod:`.fused`, re-exported here with torch_npu's names; like
  torch_npu's ``npu::`` ops they refuse tensors that are not on the NPU (NotImplementedError,
  torch's "Could not run 'npu::x' with arguments from the 'CPU' backend").
- A torch_npu custom op without a reference here raises AttributeError naming the op, so
  ``hasattr(torch_npu, "npu_x")`` feature checks answer False, as they would on a build without it.
The import hook that maps ``torch_npu`` to this package is in ``ascend_compat.simulator._stand_in``.
Importing this package has no side effect (the fused-op modules import it as their parent).
"""
from __future__ import annotations

from typing import Any

from ascend_compat.simulator.torch_npu import fused as _fused
from ascend_compat.simulator.torch_npu.fused import *  # noqa: F401,F403  (the fused ops are the public API)

_simulated = True


def _npu_only(name: str, reference):
    """``torch_npu.<name>``: the reference, refusing tensors that are not on the NPU as torch_npu's
    ``npu::`` ops do (they have kernels for the NPU only)."""
    import functools

    import torch

    @functools.wraps(reference)
    def op(*args, **kwargs):
        for value in list(args) + list(kwargs.values()):
            tensors = value if isinstance(value, (list, tuple)) else (value,)
            for t in tensors:
                if isinstance(t, torch.Tensor) and t.device.type not in ("npu", "meta"):
                    backend = "CPU" if t.device.type == "cpu" else t.device.type.upper()
                    raise NotImplementedError(
                        f"Could not run 'npu::{name}' with arguments from the '{backend}' backend. This could be "
                        f"because the operator doesn't exist for this backend, or was omitted during the selective/"
                        f"custom build process (if using custom build). 'npu::{name}' is only available for these "
                        "backends: [PrivateUse1, Meta, AutogradPrivateUse1].")
        return reference(*args, **kwargs)

    return op


for _name in getattr(_fused, "__all__", ()):
    if _name.startswith("npu_") or _name == "fast_gelu":
        globals()[_name] = _npu_only(_name, getattr(_fused, _name))
del _name
__version__ = "2.14.0"  # replaced by install_stand_in() with the emulated version

__all__ = list(getattr(_fused, "__all__", ())) + ["npu"]


def __getattr__(name: str) -> Any:
    if name == "npu":
        import torch

        if not hasattr(torch, "npu"):
            raise AttributeError(
                "torch_npu.npu is unavailable: the ascend-compat simulated NPU is not installed in this process "
                "(call ascend_compat.simulator.install() first)"
            )
        return torch.npu
    if name.startswith("npu_") or name.startswith("_npu_"):
        raise AttributeError(
            f"torch_npu.{name} is a torch_npu custom op the ascend-compat simulator has no CPU reference for; "
            f"implemented: {', '.join(sorted(n for n in __all__ if n.startswith('npu_')))}"
        )
    raise AttributeError(f"module 'torch_npu' has no attribute '{name}'")
