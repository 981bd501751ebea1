"""Accuracy: where does the NPU run depart from a CPU reference, and how to work around an op.

* :func:`compare` / :func:`compare_model` (:mod:`.mirror`): every NPU op also runs on a host copy of
  its inputs and is compared (:mod:`.metrics`); the report (:mod:`.report`) names the first
  departing op with its source line and module. ``ascend-compat compare SCRIPT`` does it for a script.
* :func:`route_to_cpu` (:mod:`.cpu_ops`): run chosen ops on the CPU at run time
  (``ASCEND_COMPAT_CPU_OPS=aten::op,...``), the workaround for a wrong or failing kernel.

Imported lazily: ``import ascend_compat.accuracy`` loads nothing else.
"""
from __future__ import annotations

from ascend_compat._lazy import lazy_exports

_EXPORTS = {
    "compare": "ascend_compat.accuracy.mirror",
    "compare_model": "ascend_compat.accuracy.mirror",
    "Comparison": "ascend_compat.accuracy.mirror",
    "route_to_cpu": "ascend_compat.accuracy.cpu_ops",
    "routed_to_cpu": "ascend_compat.accuracy.cpu_ops",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
