"""accelerate on the NPU: what works as is, and the one argument form it rejects.

accelerate (tested: 1.x) supports Ascend natively: ``is_npu_available()`` (true once ``torch_npu``
imports - the simulator's stand-in included), ``DistributedType.MULTI_NPU`` and the ``hccl``
backend chosen in ``PartialState``. What goes wrong in practice is the CUDA disguise: with
``transfer_to_npu`` (or any shim that makes ``torch.cuda.is_available()`` True) accelerate picked
NCCL and MULTI_GPU (accelerate#3020). ascend-compat's shim runs accelerate's detection points
(``PartialState._prepare_backend``, ``is_cuda_available``, ``get_max_memory``...) with the real
CUDA answer (``cuda_shim/mapping/libraries.py``), so ``Accelerator()`` picks npu + hccl.

:func:`apply` adds one fix: ``max_memory`` keys naming a device (``"npu:0"``, ``"cuda:1"``,
``torch.device("npu", 0)``) are accepted and mean that device index; accelerate only accepts
ints and raises "Device npu:0 is not recognized". Used by ``from_pretrained(device_map="auto",
max_memory=...)`` and ``infer_auto_device_map``.

Launching (documented in the README): ``accelerate launch --multi_gpu --num_processes N -m
ascend_compat run [--simulate] train.py``. ``--multi_gpu`` is needed with ``--simulate`` because the
launcher process itself does not simulate, so it counts no NPU and would silently start ONE
process; on an Ascend machine the launcher sees torch_npu and ``--multi_gpu`` is optional. The
launcher can simulate too: ``ASCEND_COMPAT_SIM_DEVICES=N ascend-compat run --simulate -m
accelerate.commands.launch -- --num_processes N -m ascend_compat run --simulate train.py``.
"""
from __future__ import annotations

import re
from typing import Any

__all__ = ["apply", "patches", "normalize_max_memory", "TESTED_VERSIONS"]

TESTED_VERSIONS = "accelerate>=1.0,<2"
_APPLIES_TO = "accelerate>=0.22"
_DEVICE_KEY = re.compile(r"^(?:npu|cuda)(?::(\d+))?$")
_PATCHES: list = []


def normalize_max_memory(max_memory: Any) -> Any:
    """``{"npu:0": "1GB", "cuda:1": 5, torch.device("npu", 2): ...}`` -> ``{0: "1GB", 1: 5, 2: ...}``.

    Other keys (ints, "cpu", "disk", "mps") and non-dict values are returned unchanged. A key
    naming a device without an index (``"npu"``) is device 0. Two keys for the same index raise
    ValueError (accelerate would otherwise keep one silently). Returns ``max_memory`` itself when
    no key needed renaming, else a new dict (the argument is never modified).
    """
    if not isinstance(max_memory, dict):
        return max_memory
    out: dict = {}
    for key, value in max_memory.items():
        index = key
        if not isinstance(key, (int, str)) and hasattr(key, "type") and hasattr(key, "index"):
            key = f"{key.type}:{key.index}" if key.index is not None else key.type
        if isinstance(key, str):
            m = _DEVICE_KEY.match(key.strip())
            index = int(m.group(1) or 0) if m else key
        if index in out:
            raise ValueError(f"max_memory names device {index} twice ({max_memory!r}); give each device once")
        out[index] = value
    return max_memory if list(out) == list(max_memory) else out


def _get_max_memory(original):
    from ascend_compat.cuda_shim.registry import hit, make_wrapper

    def get_max_memory(max_memory=None, *args, **kwargs):
        fixed = normalize_max_memory(max_memory)
        if fixed is not max_memory:
            # accelerate converts "10MB" -> int IN the caller's dict and callers rely on it
            # (transformers' get_max_memory then compares max_memory[k] with its result), so
            # rename the keys in place rather than hand accelerate a copy.
            hit("accelerate max_memory device-name keys -> indices")
            max_memory.clear()
            max_memory.update(fixed)
        return original(max_memory, *args, **kwargs)

    return make_wrapper(original, get_max_memory)


def patches() -> list:
    """The declared changes (same objects every call)."""
    from ascend_compat.cuda_shim.registry import Patch

    if not _PATCHES:
        _PATCHES.append(Patch("accelerate.utils.modeling:get_max_memory", _get_max_memory,
                              'accelerate rejects max_memory keys like "npu:0"/"cuda:0"; map them to indices',
                              _APPLIES_TO, wrap=True, optional=True, defer=True, concept="ecosystem"))
    return list(_PATCHES)


def apply() -> int:
    """Declare the accelerate patches (idempotent); returns how many were applied now."""
    from ascend_compat.ecosystem.integrations import _apply as _library_patches

    return _library_patches.apply_once(patches())
