"""DeepSpeed on the NPU: its own Ascend accelerator, and the one crash on the way to it.

DeepSpeed (tested: 0.19) ships ``accelerator/npu_accelerator.py`` (name ``"npu"``, communication
backend ``"hccl"``, ``torch.npu`` calls) and selects it when ``torch_npu`` imports (``DS_ACCELERATOR``
overrides). Under ascend-compat's shim ``torch.cuda.is_available()`` is True, so the shim runs
``real_accelerator.get_accelerator`` with the real CUDA answer (``cuda_shim/mapping/libraries.py``):
DeepSpeed resolves to npu, and ``deepspeed.init_distributed(dist_backend="nccl")`` initialises hccl
(the shim translates the backend name; DeepSpeed itself asks for its accelerator's backend).

:func:`apply` fixes ``NPUOpBuilder.installed_cann_path`` (``op_builder/npu/builder.py``), which
reads ``os.environ["ASCEND_HOME_PATH"]`` when the variable is unset (``or`` where ``and`` was
meant): every NPU op builder - including the shared-memory communication builder DeepSpeed
creates inside ``init_distributed`` - raises ``KeyError: 'ASCEND_HOME_PATH'`` on a machine where
CANN's ``set_env.sh`` was not sourced, and always on the simulator. The replacement returns the
path only when the variable is set and the directory exists, else None, and DeepSpeed continues
with its Python paths, which is what it does for a missing CANN install anyway. Without CANN,
``NPUOpBuilder.installed_cann_version`` raised and each builder printed "<op> ascend_cann is missing,
npu ops cannot be compiled!" (21 lines per rank): now it returns None (the builder then compiles
without CANN, as before) and says it once per process with the fix on real torch_npu, and nothing on
the simulated NPU, where CANN is not simulated by design. ``ascend-compat doctor`` reports the missing CANN.

It also makes the npu accelerator answer ``is_fp64_supported() -> False`` (it inherits True): ZeRO
stage 1/2 then accumulates gradient norms in float32, as DeepSpeed does for MPS, instead of float64,
which Ascend's AI cores do not compute (float64 kernels are per op and slow where they exist; a
dtype-only ``.double()`` of an npu tensor even returns float32 in torch_npu).

Stand-in requirements (what DeepSpeed's npu accelerator calls on ``torch.npu``) are all present in
the simulator; ``torch.npu.npurt()`` (pinned host-memory registration) is optional for DeepSpeed.
"""
from __future__ import annotations

import os

__all__ = ["apply", "patches", "installed_cann_path", "TESTED_VERSIONS"]

TESTED_VERSIONS = "deepspeed>=0.16,<0.20"
_APPLIES_TO = "deepspeed>=0.10"
_PATCHES: list = []


def installed_cann_path(self=None):
    """``$ASCEND_HOME_PATH`` if it is set and exists, else None (DeepSpeed's intended behaviour)."""
    path = os.environ.get("ASCEND_HOME_PATH")
    return path if path and os.path.isdir(path) else None


def _cann_path(original):
    from ascend_compat.cuda_shim.registry import make_wrapper

    def method(self):
        return installed_cann_path(self)

    return make_wrapper(original, method)


_SAID: list = []


def _cann_version(original):
    """``installed_cann_version``: None without a CANN install (once per process a line saying what to do,
    except on the simulated NPU), instead of an AssertionError each builder turns into a print."""
    from ascend_compat.cuda_shim.registry import make_wrapper

    def method(self, name=""):
        if installed_cann_path(self) is not None:
            return original(self, name)
        if not _SAID:
            _SAID.append(True)
            from ascend_compat import backend

            if not backend.simulator_installed():
                import sys

                print("ascend-compat: DeepSpeed cannot compile its NPU ops: no CANN install (ASCEND_HOME_PATH is "
                      "unset or missing); source CANN's set_env.sh (`ascend-compat doctor` checks it). Its Python "
                      "code paths run meanwhile.", file=sys.stderr)
        return None

    return make_wrapper(original, method)


def _no_fp64(self) -> bool:
    return False


def patches() -> list:
    """The declared changes (same objects every call)."""
    from ascend_compat.cuda_shim.registry import Patch

    if not _PATCHES:
        _PATCHES.append(Patch(
            "deepspeed.ops.op_builder.npu.builder:NPUOpBuilder.installed_cann_path", _cann_path,
            "DeepSpeed reads os.environ['ASCEND_HOME_PATH'] when it is unset (KeyError in init_distributed)",
            _APPLIES_TO, wrap=True, optional=True, defer=True, rebind=False, concept="ecosystem"))
        _PATCHES.append(Patch(
            "deepspeed.ops.op_builder.npu.builder:NPUOpBuilder.installed_cann_version", _cann_version,
            "without CANN every NPU op builder printed 'ascend_cann is missing' (21 lines per rank)",
            _APPLIES_TO, wrap=True, optional=True, defer=True, rebind=False, concept="ecosystem"))
        _PATCHES.append(Patch(
            "deepspeed.accelerator.npu_accelerator:NPU_Accelerator.is_fp64_supported", _no_fp64,
            "ZeRO accumulates grad norms in float64 when the accelerator claims fp64; Ascend AI cores have none",
            _APPLIES_TO, optional=True, defer=True, rebind=False, concept="ecosystem"))
    return list(_PATCHES)


def apply() -> int:
    """Declare the DeepSpeed patches (idempotent); returns how many were applied now."""
    from ascend_compat.ecosystem.integrations import _apply as _library_patches

    return _library_patches.apply_once(patches())
