"""The runtime translation layer: CUDA PyTorch calls -> the NPU backend (``torch.npu``).

Public entry points are re-exported by :mod:`ascend_compat` (``activate``, ``deactivate``,
``activated``, ``report``); this package holds the machinery:

* :mod:`.registry` - declared patches, apply/revert, stale-binding rebinding, counters;
* :mod:`.devices` - the one device-value translation function;
* :mod:`.patches` - one module per CUDA concept; :mod:`.mapping` - the data tables they apply;
* :mod:`.dtype_manager` - float64 policy; :mod:`.policies` - opt-in jit / channels_last policies.

What user code sees while active (decided here, tested in ``tests/cuda_shim``):

* ``torch.device("cuda:0")`` is the real ``npu:0`` device; ``isinstance(d, torch.device)`` holds;
* ``t.is_cuda`` is True for npu tensors; ``x.device == torch.device("cuda:0")`` is True for a
  tensor on ``npu:0`` (both sides are ``npu:0``); ``t.device.type`` is ``"npu"`` and
  ``str(t.device)`` is ``"npu:0"`` (``torch.device`` is a C type whose fields cannot be faked
  without breaking C++ callers); ``ascend-compat check`` flags such string comparisons;
* ``dist.get_backend()`` equals both ``"hccl"`` and ``"nccl"``;
* ``torch.cuda.is_available()`` is True; library detection points see the real answer.
"""
from __future__ import annotations

import importlib
import threading
from typing import Any, Callable

from ascend_compat.cuda_shim import registry

__all__ = ["apply", "revert", "is_active", "report", "Report"]

_LOCK = threading.RLock()
_STATE: dict[str, Any] = {"active": False, "backend": None}


def is_active() -> bool:
    return bool(_STATE["active"])


def declared_changes() -> list:
    """Every change of every patch module, in application order (needs the backend present)."""
    from ascend_compat.cuda_shim import devices
    from ascend_compat.cuda_shim.patches import ORDER

    devices.set_target(_backend_name())
    out: list = []
    for name in ORDER:
        module = importlib.import_module(f"ascend_compat.cuda_shim.patches.{name}")
        out.extend(module.patches())
    return out


def _backend_name() -> str:
    import torch

    return torch._C._get_privateuse1_backend_name()


def apply(backend: str, extra: Callable[[], list] | None = None) -> int:
    """Apply all patches (the backend must already be installed), then the changes ``extra()``
    returns (the caller's: activation passes the ecosystem's, which this package never imports).
    Idempotent; returns #changes."""
    with _LOCK:
        if _STATE["active"]:
            return 0
        if _backend_name() != "npu":
            raise RuntimeError(
                "ascend-compat: the PrivateUse1 backend is not registered as 'npu'; install torch_npu "
                "(or use `ascend-compat run --simulate`) before activating the shim"
            )
        n = registry.apply_all(declared_changes() + (list(extra()) if extra is not None else []))
        _STATE["active"] = True
        _STATE["backend"] = backend
        registry.log.debug("cuda shim active on %s: %d changes", backend, n)
        return n


def revert() -> int:
    """Undo every change (environment included); returns how many were reverted."""
    from ascend_compat.cuda_shim import policies

    with _LOCK:
        policies.reset()
        n = registry.revert_all()
        _STATE["active"] = False
        _STATE["backend"] = None
        return n


class Report:
    """What the shim did: backend, applied/skipped changes, translation counts."""

    def __init__(self) -> None:
        self.active = is_active()
        self.backend = _STATE["backend"]
        self.applied = [(c.name, getattr(c, "concept", "") or "", c.reason) for c in registry.applied()]
        self.skipped = registry.skipped()
        self.counters = registry.counters()

    def as_dict(self) -> dict:
        return {"active": self.active, "backend": self.backend, "applied": self.applied,
                "skipped": self.skipped, "counters": self.counters}

    def __str__(self) -> str:
        lines = [f"ascend-compat shim: {'active on ' + str(self.backend) if self.active else 'inactive'}",
                 f"  {len(self.applied)} patches applied, {len(self.skipped)} not applicable here"]
        if self.counters:
            lines.append("  translations:")
            width = max(len(k) for k in self.counters)
            for key, n in sorted(self.counters.items(), key=lambda kv: (-kv[1], kv[0])):
                lines.append(f"    {key:<{width}}  {n}")
        else:
            lines.append("  no translations yet")
        return "\n".join(lines)

    __repr__ = __str__


def report() -> Report:
    return Report()
