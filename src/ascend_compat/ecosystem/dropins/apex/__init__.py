"""ascend-compat's apex drop-in: the apex APIs apex-era training scripts use, on torch / torch_npu.

Emulated API era: NVIDIA apex 0.1 as of the 22.x-24.x releases (``apex.amp`` initialize /
scale_loss / state_dict, ``apex.optimizers.FusedAdam/FusedLAMB/FusedSGD/FusedAdagrad``,
``apex.parallel.DistributedDataParallel/SyncBatchNorm/convert_syncbn_model``,
``apex.normalization.FusedLayerNorm/FusedRMSNorm``). Stock apex needs CUDA extensions and cannot
run on Ascend. Each submodule's docstring states its mapping; anything else raises with the torch
replacement. While the ascend-compat shim is active and apex is not installed, ``import apex``
resolves here (see :mod:`ascend_compat.ecosystem.dropins._finder`).
"""
from __future__ import annotations

import importlib

__version__ = "0.1"
__all__ = ["__version__", "amp", "optimizers", "parallel", "normalization"]

_SUBMODULES = ("amp", "optimizers", "parallel", "normalization")


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
