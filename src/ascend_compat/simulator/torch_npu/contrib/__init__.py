"""``torch_npu.contrib`` of the stand-in.

- ``transfer_to_npu``: the entry point scripts already ported to Ascend start with (served from
  ``ascend_compat._transfer_to_npu``, which activates the CUDA shim: see ``_stand_in``);
- ``contrib.function`` / ``contrib.module``: the cheap helpers (``roll``, ``matmul_transpose``,
  ``npu_fast_condition_index_put``; ``Mish``, ``SiLU``, ``Swish``, ``LabelSmoothingCrossEntropy``,
  ``NpuDropPath``, ``FastBatchNorm1d/2d/3d``), also importable from here as in torch_npu. Other contrib
  names (ROI/NMS/deformable-conv kernels, quantised linears) raise AttributeError saying they are not
  simulated.
"""
from __future__ import annotations

_FUNCTIONS = ("roll", "matmul_transpose", "npu_fast_condition_index_put")
_MODULES = ("Mish", "SiLU", "Swish", "LabelSmoothingCrossEntropy", "NpuDropPath", "FastBatchNorm1d",
            "FastBatchNorm2d", "FastBatchNorm3d")
#: torch_npu.contrib.__all__ names without a reference here
_NOT_SIMULATED = ("npu_multiclass_nms", "npu_batched_multiclass_nms", "npu_single_level_responsible_flags",
                  "npu_bbox_coder_encode_yolo", "npu_bbox_coder_encode_xyxy2xywh", "npu_bbox_coder_decode_xywh2xyxy",
                  "fuse_add_softmax_dropout", "npu_fused_attention_with_layernorm", "npu_fused_attention",
                  "ChannelShuffle", "Prefetcher", "ROIAlign", "ModulatedDeformConv", "PSROIPool", "NpuFairseqDropout",
                  "NpuCachedDropout", "MultiheadAttention", "Focus", "LinearA8W8Quant", "LinearQuant",
                  "LinearWeightQuant")

__all__ = list(_FUNCTIONS + _MODULES)


def __getattr__(name: str):
    import importlib

    # ``from torch_npu.contrib import transfer_to_npu`` looks the submodule up under this package's
    # own name; route it through ``torch_npu.contrib.<name>``, which the stand-in's finder serves
    if name == "transfer_to_npu":
        return importlib.import_module("torch_npu.contrib.transfer_to_npu")
    if name in _FUNCTIONS:
        return getattr(importlib.import_module("ascend_compat.simulator.torch_npu.contrib.function"), name)
    if name in _MODULES:
        return getattr(importlib.import_module("ascend_compat.simulator.torch_npu.contrib.module"), name)
    if name in _NOT_SIMULATED:
        raise AttributeError(f"torch_npu.contrib.{name} is not simulated by ascend-compat (it wraps an Ascend-only "
                             "kernel); use a plain PyTorch equivalent on the simulated NPU")
    raise AttributeError(f"module 'torch_npu.contrib' has no attribute {name!r}")
