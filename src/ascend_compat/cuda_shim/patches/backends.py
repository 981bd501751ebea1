"""``torch.backends.cudnn.*`` / ``torch.backends.cuda.*``: accepted and harmless; TF32 -> HF32.

The flags keep their torch behaviour (they only set CPU-side switches here). Setting
``torch.backends.cuda.matmul.allow_tf32`` also sets ``torch.npu.matmul.allow_hf32`` and
``torch.backends.cudnn.allow_tf32`` also sets ``torch.npu.conv.allow_hf32`` when the backend has
those switches. SDPA backend contexts (``sdp_kernel``, ``torch.nn.attention.sdpa_kernel``) need no
change.
"""
from __future__ import annotations

from typing import Any

from ascend_compat.cuda_shim.devices import target
from ascend_compat.cuda_shim.registry import Patch, hit, make_wrapper


def _hf32_switch(kind: str) -> Any:
    import torch

    npu = getattr(torch, target(), None)
    holder = getattr(npu, kind, None)
    return holder if holder is not None and hasattr(holder, "allow_hf32") else None


def _cublas_setattr(original):
    def __setattr__(self, name: str, value: Any) -> Any:
        result = original(self, name, value)
        if name == "allow_tf32" or name == "fp32_precision":
            holder = _hf32_switch("matmul")
            if holder is not None:
                holder.allow_hf32 = bool(value) if name == "allow_tf32" else value == "tf32"
                hit("backends.cuda.matmul.allow_tf32 -> allow_hf32")
        return result

    return make_wrapper(original, __setattr__)


def _cudnn_tf32(original_prop):
    from torch.backends import ContextProp

    def set_tf32(value: bool) -> None:
        original_prop.setter(value)
        holder = _hf32_switch("conv")
        if holder is not None:
            holder.allow_hf32 = bool(value)
            hit("backends.cudnn.allow_tf32 -> conv.allow_hf32")

    return ContextProp(original_prop.getter, set_tf32)


def _cudnn_prop() -> Any:
    import sys

    import torch.backends.cudnn  # noqa: F401 - make sure the PropModule is in sys.modules

    return type(sys.modules["torch.backends.cudnn"]).__dict__["allow_tf32"]


def patches() -> list:
    return [
        Patch("torch.backends.cuda:cuBLASModule.__setattr__", _cublas_setattr, "TF32 -> HF32 (matmul)",
              wrap=True, rebind=False, concept="backends"),
        Patch("torch.backends.cudnn:CudnnModule.allow_tf32", _cudnn_tf32(_cudnn_prop()), "TF32 -> HF32 (conv)",
              rebind=False, concept="backends"),
    ]
