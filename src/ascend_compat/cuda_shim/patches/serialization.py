"""``torch.load`` of CUDA-saved checkpoints restores onto the NPU by default.

A deserializer registered ahead of torch's own (``torch.serialization.register_package``) maps the
saved *location tags* ``"cuda"``/``"cuda:N"`` to ``"npu"``/``"npu:N"``. It therefore covers every
``map_location`` form (None, a dict with unlisted locations, a callable returning None) and
``weights_only`` loading, and never looks at file names or any other string
(``torch.load("ckpt_cuda.pt")`` opens exactly that file). A ``map_location`` of ``"cuda"`` or
``torch.device("cuda")`` itself resolves through the same tag translation.
"""
from __future__ import annotations

from typing import Any

from ascend_compat.cuda_shim.devices import is_cuda_string, target
from ascend_compat.cuda_shim.registry import Change, hit

PRIORITY = 5  # torch's cpu deserializer is 10, cuda 20: run first


class CudaCheckpointRestore(Change):
    name = "torch.serialization: restore 'cuda' storages onto npu"
    reason = "CUDA checkpoints must load on a machine without CUDA"

    def apply(self) -> bool:
        import torch.serialization as ser

        tgt = target()

        def restore(storage: Any, location: str) -> Any:
            if isinstance(location, str) and is_cuda_string(location):
                hit("torch.load(cuda storage)", location)
                return ser.default_restore_location(storage, tgt + location[4:])
            return None

        def tag(obj: Any) -> None:
            return None

        self._entry = (PRIORITY, tag, restore)
        ser.register_package(PRIORITY, tag, restore)
        return True

    def revert(self) -> None:
        import torch.serialization as ser

        registry = ser._package_registry
        for i, entry in enumerate(registry):
            if entry[1] is self._entry[1] and entry[2] is self._entry[2]:
                del registry[i]
                break


def patches() -> list:
    return [CudaCheckpointRestore()]
