"""CUDA-only third-party libraries and their Ascend replacements (hand-written knowledge, as data).

Keys are top-level import names (or dotted prefixes: the longest matching prefix wins).
Each entry: handling (auto / partial / manual, same meaning as in the rule catalogue), what the
library is, and the replacement on Ascend with a note on why. Importing any of these is reported
once per import statement (rule ``cuda-library``); migrate rewrites only ``flash_attn`` imports
(to the ascend-compat drop-in), everything else is listed for a human.
"""
from __future__ import annotations

from typing import NamedTuple


class Library(NamedTuple):
    handling: str
    what: str
    replacement: str


LIBRARIES: dict[str, Library] = {
    # attention kernels
    "flash_attn": Library(
        "partial", "FlashAttention CUDA kernels",
        "ascend_compat.ecosystem.dropins.flash_attn (drop-in on torch_npu.npu_fusion_attention: "
        "flash_attn_func / flash_attn_varlen_func; dropout and window semantics follow the NPU "
        "kernel), or F.scaled_dot_product_attention"),
    "flash_attn_2_cuda": Library("manual", "FlashAttention's compiled CUDA module",
                                 "use flash_attn's Python API via ascend_compat.ecosystem.dropins.flash_attn"),
    "flash_attn_interface": Library("manual", "FlashAttention-3 (Hopper only)",
                                    "torch_npu.npu_fusion_attention or F.scaled_dot_product_attention"),
    "flash_attn.ops": Library("manual", "FlashAttention fused ops (layer norm, rotary, xentropy, MLP)",
                              "torch_npu.npu_rms_norm / npu_rotary_mul / plain torch equivalents"),
    "flash_attn.layers": Library("manual", "FlashAttention fused layers (rotary, patch embed)",
                                 "torch_npu.npu_rotary_mul or the plain PyTorch reference"),
    "xformers": Library("manual", "memory-efficient attention and fused ops (CUDA/Triton)",
                        "F.scaled_dot_product_attention or torch_npu.npu_fusion_attention"),
    "flashinfer": Library("manual", "LLM serving attention kernels (CUDA)",
                          "vllm-ascend / torch_npu.npu_fusion_attention, npu_incre_flash_attention"),
    "sageattention": Library("manual", "quantized attention (CUDA/Triton)",
                             "torch_npu.npu_fusion_attention"),
    "natten": Library("manual", "neighbourhood attention CUDA kernels",
                      "the library's pure-PyTorch fallback, or a masked F.scaled_dot_product_attention"),
    # NVIDIA training stacks
    "apex": Library("manual", "NVIDIA apex (amp, fused optimizers, fused layer norm, DDP)",
                    "torch.amp + torch.npu.amp.GradScaler for apex.amp; torch.optim.AdamW or "
                    "Huawei's Ascend apex (NpuFusedAdamW) for apex.optimizers; nn.LayerNorm / "
                    "torch_npu.npu_rms_norm for apex.normalization; torch DDP (hccl) for apex.parallel"),
    "transformer_engine": Library("manual", "NVIDIA Transformer Engine (FP8, fused layers)",
                                  "plain torch.nn layers in bf16; MindSpeed for Megatron-style fused layers"),
    "megatron.core.fusions": Library("manual", "Megatron fused CUDA kernels",
                                     "MindSpeed (Megatron on Ascend) patches these"),
    "deepspeed.ops": Library("manual", "DeepSpeed CUDA ops (FusedAdam, FusedLamb, transformer kernels)",
                             "DeepSpeed's NPU op builders (op_builder/npu, e.g. NPU FusedAdam) or torch.optim"),
    "deepspeed": Library("partial", "DeepSpeed",
                         "DeepSpeed supports Ascend through its npu accelerator (selected when torch_npu "
                         "imports); CUDA-only ops and Triton features are unavailable"),
    # quantization
    "bitsandbytes": Library("partial", "8-bit/4-bit quantization (CUDA kernels)",
                            "bitsandbytes >= 0.45 has NPU nf4 quant/dequant; 8-bit optimizers and "
                            "LLM.int8 need alternatives (torch_npu.npu_quant_matmul, msModelSlim)"),
    "auto_gptq": Library("manual", "GPTQ CUDA kernels", "msModelSlim quantization / torch_npu.npu_weight_quant_batchmatmul"),
    "gptqmodel": Library("manual", "GPTQ CUDA kernels", "msModelSlim quantization / torch_npu.npu_weight_quant_batchmatmul"),
    "awq": Library("manual", "AWQ CUDA kernels", "msModelSlim quantization / torch_npu.npu_weight_quant_batchmatmul"),
    "exllamav2": Library("manual", "ExLlamaV2 CUDA kernels", "vllm-ascend or MindIE for quantized inference"),
    "marlin": Library("manual", "Marlin int4 GEMM (CUDA)", "torch_npu.npu_weight_quant_batchmatmul"),
    # kernels / compilers
    "triton": Library("manual", "Triton GPU kernels", "triton-ascend (port kernels), or torch / torch_npu ops"),
    "liger_kernel": Library("manual", "Triton fused LLM kernels", "torch_npu fused ops (npu_rms_norm, npu_swiglu, npu_rotary_mul)"),
    "unsloth": Library("manual", "Triton-based fine-tuning kernels", "plain transformers/peft training on torch_npu"),
    "mamba_ssm": Library("manual", "Mamba selective-scan CUDA kernels",
                         "the library's selective_scan_ref (pure PyTorch) or a chunked scan in torch"),
    "selective_scan_cuda": Library("manual", "Mamba selective-scan CUDA module", "selective_scan_ref (pure PyTorch)"),
    "causal_conv1d": Library("manual", "causal depthwise conv1d CUDA kernel",
                             "F.conv1d(x, w, padding=k-1, groups=C)[..., :L] (the reference implementation)"),
    "torch_tensorrt": Library("manual", "TensorRT compilation", "torchair (torch.compile NPU backend) or ATC/OM models for MindIE"),
    "tensorrt": Library("manual", "NVIDIA TensorRT runtime", "ATC-converted OM models with ACL / MindIE"),
    "pycuda": Library("manual", "raw CUDA driver bindings", "torch.npu APIs, or pyACL (acl) for low-level control"),
    "cuda": Library("manual", "cuda-python driver/runtime bindings", "torch.npu APIs, or pyACL (acl)"),
    "cupy": Library("manual", "NumPy on CUDA", "torch tensors on the NPU, or NumPy on the host"),
    "numba.cuda": Library("manual", "Numba CUDA kernels", "torch operators on the NPU, or numba on the CPU"),
    "cudf": Library("manual", "RAPIDS GPU DataFrames", "pandas / polars on the host"),
    "cuml": Library("manual", "RAPIDS GPU machine learning", "scikit-learn on the host"),
    "cugraph": Library("manual", "RAPIDS GPU graph analytics", "networkx / torch_geometric"),
    "cucim": Library("manual", "RAPIDS GPU image processing", "scikit-image / torchvision"),
    "nvidia.dali": Library("manual", "NVIDIA DALI data loading", "torchvision / torch DataLoader (DVPP via torchvision_npu)"),
    "dali": Library("manual", "NVIDIA DALI data loading", "torchvision / torch DataLoader"),
    "vllm": Library("partial", "vLLM serving", "vllm-ascend (out-of-tree platform plugin)"),
    # monitoring
    "pynvml": Library("manual", "NVML device monitoring", "npu-smi, torch.npu.mem_get_info()/utilization()"),
    "nvidia_smi": Library("manual", "NVML device monitoring", "npu-smi, torch.npu.mem_get_info()"),
    "GPUtil": Library("manual", "nvidia-smi based GPU listing", "torch.npu.device_count() / mem_get_info()"),
    "gpustat": Library("manual", "nvidia-smi based GPU status", "npu-smi info"),
    "nvitop": Library("manual", "NVML device monitoring", "npu-smi info"),
    # geometric / 3D CUDA extensions
    "torch_scatter": Library("partial", "scatter ops (CUDA extension)",
                             "torch.Tensor.scatter_reduce (native) — the CPU build falls back to the host"),
    "torch_sparse": Library("manual", "sparse ops (CUDA extension)", "torch.sparse / torch_geometric native ops"),
    "torch_cluster": Library("manual", "clustering ops (CUDA extension)", "CPU build on the host"),
    "spconv": Library("manual", "sparse convolution (CUDA)", "no NPU build; dense conv or a host fallback"),
    "MinkowskiEngine": Library("manual", "sparse tensor convolution (CUDA)", "no NPU build; dense conv"),
    "pointnet2_ops": Library("manual", "PointNet++ CUDA ops", "mmcv's NPU ops or a pure-PyTorch reference"),
    "detectron2._C": Library("manual", "detectron2 compiled ops", "torchvision.ops (NPU-supported) equivalents"),
    "mmcv._ext": Library("partial", "mmcv compiled ops", "the mmcv build for Ascend (MMCV_WITH_OPS=1 on NPU) provides most ops"),
    "kaolin": Library("manual", "NVIDIA 3D deep learning ops", "pure-PyTorch equivalents"),
    "nvdiffrast": Library("manual", "NVIDIA differentiable rasterizer", "pytorch3d CPU rasterizer or a port"),
    "tinycudann": Library("manual", "tiny-cuda-nn fused MLPs / hash grids", "plain torch MLPs and hash encodings"),
}


def lookup(module: str) -> tuple[str, Library] | None:
    """The table entry for an imported module name (longest dotted prefix), or None."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        entry = LIBRARIES.get(key)
        if entry is not None:
            return key, entry
    return None


#: top-level names: a file that mentions none of them cannot import a listed library
TOP_LEVEL_NAMES = frozenset(k.split(".")[0] for k in LIBRARIES)
