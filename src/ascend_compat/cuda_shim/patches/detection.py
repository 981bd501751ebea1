"""Device-type detection inside torch and the DataLoader's ``pin_memory_device``.

``torch._utils._get_available_device_type`` answers "cuda" as soon as ``torch.cuda.is_available()``
is True, after which ``DataParallel`` expects its module on ``cuda:0``. The replacement asks with
the real CUDA answer, so it says "npu"; the registry also rebinds the copies that modules took at
import (``torch.nn.parallel.data_parallel``, ``torch.distributed.checkpoint.filesystem``).
"""
from __future__ import annotations

from typing import Any

from ascend_compat.cuda_shim.devices import translate
from ascend_compat.cuda_shim.registry import Patch, hit, make_wrapper


def _true_device_type(original):
    from ascend_compat.cuda_shim.patches.cuda_namespace import real_cuda

    def _get_available_device_type() -> Any:
        with real_cuda():
            return original()

    return make_wrapper(original, _get_available_device_type)


def _dataloader_init(original):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        d = kwargs.get("pin_memory_device")
        if d:
            n = translate(d)
            if n is not d:
                kwargs["pin_memory_device"] = n
                hit("DataLoader(pin_memory_device='cuda')")
        return original(self, *args, **kwargs)

    return make_wrapper(original, __init__)


def patches() -> list:
    return [
        Patch("torch._utils:_get_available_device_type", _true_device_type,
              "torch-internal device detection must see the NPU, not CUDA", wrap=True, concept="detection"),
        Patch("torch.utils.data.dataloader:DataLoader.__init__", _dataloader_init,
              "DataLoader(pin_memory_device='cuda')", wrap=True, rebind=False, concept="detection"),
    ]
