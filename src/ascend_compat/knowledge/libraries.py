"""CUDA-only (or CUDA-first) third-party libraries and what to do on Ascend.

Keys are import names or dotted prefixes (the longest matching prefix wins). ``flash_attn``,
``apex``, ``xformers`` and ``bitsandbytes`` have ascend-compat drop-ins (``ascend_compat.ecosystem.dropins``)
that answer their imports under the shim, so they are ``partial``: the main entry points run on the
NPU, with the differences each drop-in documents. Libraries without a drop-in are ``manual``. ``auto``
records are device-generic libraries (DeepSpeed through its accelerator API): their use is no CUDA use and
check does not report it; their CUDA-only parts (``deepspeed.ops``) are records of their own.
"""
from __future__ import annotations

from typing import Optional

from ascend_compat.knowledge.records import AUTO, EVERY, MANUAL, PARTIAL, VERBS, Library, Switch, Versions


def _lib(name: str, verdict: str, what: str, replacement: str, dropin: Optional[str] = None,
         example: Optional[str] = None, expect: Optional[str] = None, versions: Versions = EVERY,
         provides: tuple = ()) -> Library:
    advice = replacement if replacement.split(" ", 1)[0] in VERBS else "use " + replacement
    if example is None and verdict == MANUAL:
        example = f"import {name}"
    return Library(name, verdict, what, advice.rstrip(".") + ".", dropin, example, expect, versions, provides)


_IMPL = "ascend_compat.ecosystem.dropins"


_QKV = ("import torch\nq = torch.randn(1, 8, 2, 16, device='cuda', dtype=torch.float16)\n")

RECORDS: tuple[Library, ...] = (
    # attention kernels
    _lib("flash_attn", PARTIAL, "FlashAttention CUDA kernels",
         "keep the import: the ascend-compat drop-in runs flash_attn_func and flash_attn_varlen_func on "
         "torch_npu.npu_fusion_attention, returns an empty S_dmask and refuses softcap and paged KV caches",
         "ascend_compat.ecosystem.dropins.flash_attn",
         _QKV + "from flash_attn import flash_attn_func\nout, lse, s_dmask = flash_attn_func(q, q, q, return_attn_probs=True)\n"
         "try:\n    flash_attn_func(q, q, q, softcap=5.0)\nexcept NotImplementedError:\n    refused = 'softcap refused'\n"
         "print(out.device.type, 'S_dmask', s_dmask.numel(), refused)",
         "npu S_dmask 0 softcap refused", Versions(library="<3"),
         provides=(("flash_attn", f"{_IMPL}.flash_attn"), ("flash_attn.flash_attn_interface", f"{_IMPL}.flash_attn.interface"),
                   ("flash_attn.bert_padding", f"{_IMPL}.flash_attn.bert_padding"), ("flash_attn.layers", ""),
                   ("flash_attn.layers.rotary", f"{_IMPL}.flash_attn.rotary"), ("flash_attn.ops", ""),
                   ("flash_attn.ops.triton", ""), ("flash_attn.ops.triton.rotary", f"{_IMPL}.flash_attn.rotary"))),
    _lib("flash_attn_2_cuda", MANUAL, "FlashAttention's compiled CUDA module",
                                 "use flash_attn's Python API via ascend_compat.ecosystem.dropins.flash_attn"),
    # flash-attention's other compiled CUDA extensions (csrc/layer_norm, csrc/rotary, csrc/fused_dense_lib, ...)
    _lib("dropout_layer_norm", MANUAL, "FlashAttention's fused dropout + layer norm CUDA extension",
         "torch.nn.functional.layer_norm, or torch_npu.npu_rms_norm for RMSNorm"),
    _lib("rotary_emb", MANUAL, "FlashAttention's rotary embedding CUDA extension", "torch_npu.npu_rotary_mul"),
    _lib("fused_dense_lib", MANUAL, "FlashAttention's fused dense CUDA extension", "torch.nn.functional.linear"),
    _lib("xentropy_cuda_lib", MANUAL, "FlashAttention's cross-entropy CUDA extension",
         "torch.nn.functional.cross_entropy"),
    _lib("ring_flash_attn", MANUAL, "ring attention built on FlashAttention's CUDA kernels",
         "MindSpeed's context-parallel ring attention, or torch_npu.npu_fusion_attention per sequence chunk"),
    _lib("flash_attn_interface", MANUAL, "FlashAttention-3 (Hopper only)",
                                    "torch_npu.npu_fusion_attention or F.scaled_dot_product_attention"),
    _lib("flash_attn.ops", MANUAL, "FlashAttention fused ops (layer norm, rotary, xentropy, MLP)",
                              "torch_npu.npu_rms_norm / npu_rotary_mul / plain torch equivalents",
         example="from flash_attn.ops.layer_norm import dropout_add_layer_norm"),
    _lib("xformers", PARTIAL, "memory-efficient attention and fused ops (CUDA/Triton)",
         "keep the import: the ascend-compat drop-in runs xformers.ops.memory_efficient_attention and its "
         "attention biases on the NPU; replace other xformers components with F.scaled_dot_product_attention",
         "ascend_compat.ecosystem.dropins.xformers",
         _QKV + "import xformers.ops as xops\nout = xops.memory_efficient_attention(q, q, q)\n"
         "try:\n    import xformers.components\nexcept ImportError:\n    other = 'components missing'\n"
         "print(out.device.type, other)", "npu components missing",
         provides=(("xformers", f"{_IMPL}.xformers"), ("xformers.ops", f"{_IMPL}.xformers"),
                   ("xformers.ops.fmha", f"{_IMPL}.xformers"), ("xformers.ops.fmha.attn_bias", f"{_IMPL}.xformers.attn_bias"))),
    _lib("flashinfer", MANUAL, "LLM serving attention kernels (CUDA)",
                          "vllm-ascend / torch_npu.npu_fusion_attention, npu_incre_flash_attention"),
    _lib("sageattention", MANUAL, "quantized attention (CUDA/Triton)",
                             "torch_npu.npu_fusion_attention"),
    _lib("natten", MANUAL, "neighbourhood attention CUDA kernels",
                      "the library's pure-PyTorch fallback, or a masked F.scaled_dot_product_attention"),
    # NVIDIA training stacks
    _lib("apex", PARTIAL, "NVIDIA apex (amp, fused optimizers, fused layer norm, DDP)",
         "keep apex.amp, apex.optimizers, apex.normalization and apex.parallel: the ascend-compat drop-in "
         "maps them to torch.amp, torch.optim, torch.nn and torch DDP; replace other apex parts with torch "
         "equivalents",
         "ascend_compat.ecosystem.dropins.apex",
         "import torch\nfrom apex.normalization import FusedLayerNorm\n"
         "out = FusedLayerNorm(8).cuda()(torch.randn(2, 8, device='cuda'))\n"
         "try:\n    import apex.contrib\nexcept ImportError:\n    other = 'contrib missing'\n"
         "print(out.device.type, other)", "npu contrib missing",
         provides=(("apex", f"{_IMPL}.apex"), ("apex.amp", f"{_IMPL}.apex.amp"), ("apex.optimizers", f"{_IMPL}.apex.optimizers"),
                   ("apex.parallel", f"{_IMPL}.apex.parallel"), ("apex.normalization", f"{_IMPL}.apex.normalization"))),
    # apex's compiled CUDA extensions, imported directly by code that wants apex's kernels
    _lib("amp_C", MANUAL, "apex's multi-tensor CUDA kernels", "torch.optim optimizers with foreach=True"),
    _lib("fused_adam_cuda", MANUAL, "apex's deprecated fused Adam CUDA extension",
         "torch.optim.AdamW, which torch_npu runs with its fused NPU kernels"),
    _lib("fused_layer_norm_cuda", MANUAL, "apex's fused layer norm CUDA extension",
         "torch.nn.LayerNorm, or torch_npu.npu_rms_norm for RMSNorm"),
    _lib("syncbn", MANUAL, "apex's synchronized batch norm CUDA extension", "torch.nn.SyncBatchNorm"),
    _lib("mlp_cuda", MANUAL, "apex's fused MLP CUDA extension", "torch.nn.Linear layers"),
    _lib("fused_dense_cuda", MANUAL, "apex's fused dense CUDA extension", "torch.nn.functional.linear"),
    _lib("transformer_engine", MANUAL, "NVIDIA Transformer Engine (FP8, fused layers)",
                                  "plain torch.nn layers in bf16; MindSpeed for Megatron-style fused layers"),
    _lib("megatron.core.fusions", MANUAL, "Megatron fused CUDA kernels",
                                     "MindSpeed (Megatron on Ascend) patches these"),
    _lib("deepspeed.ops", PARTIAL, "DeepSpeed ops (FusedAdam, FusedLamb, transformer kernels)",
         "keep the ops DeepSpeed builds for NPU (op_builder/npu, e.g. FusedAdam); replace its CUDA-only "
         "transformer kernels with torch.optim or torch_npu ops",
         example="import torch\nfrom deepspeed.ops.adam import FusedAdam\n"
                 "from deepspeed.accelerator import get_accelerator\n"
                 "p = torch.nn.Parameter(torch.ones(1, device='cuda'))\nFusedAdam([p])\n"
                 "print(p.device.type, type(get_accelerator().create_op_builder('TransformerBuilder')).__name__)",
         expect="npu NotImplementedBuilder", versions=Versions(library=">=0.10")),
    # device-generic: not CUDA uses (check does not report them; their CUDA-only parts have records of their own)
    _lib("deepspeed", AUTO, "DeepSpeed (device-generic through its accelerator API)",
         "keep DeepSpeed: it selects its npu accelerator when torch_npu is importable, so get_accelerator() and "
         "deepspeed.initialize need no edit",
         None,
         "from deepspeed.accelerator import get_accelerator\nprint(get_accelerator().device_name())",
         None, Versions(library=">=0.10")),
    # quantization
    _lib("bitsandbytes", PARTIAL, "8-bit/4-bit quantization (CUDA kernels)",
         "keep the import: the ascend-compat drop-in runs bitsandbytes.optim optimizers with full-precision "
         "state; use torch_npu.npu_quant_matmul or msModelSlim for quantized layers",
         "ascend_compat.ecosystem.dropins.bitsandbytes",
         "import torch, bitsandbytes as bnb\np = torch.nn.Parameter(torch.ones(4, device='cuda'))\n"
         "opt = bnb.optim.AdamW8bit([p])\np.sum().backward()\nopt.step()\n"
         "print(p.device.type, 'state', opt.state[p]['exp_avg'].dtype)", "npu state torch.float32",
         provides=(("bitsandbytes", f"{_IMPL}.bitsandbytes"), ("bitsandbytes.optim", f"{_IMPL}.bitsandbytes:optim"),
                   ("bitsandbytes.nn", f"{_IMPL}.bitsandbytes:nn"), ("bitsandbytes.functional", f"{_IMPL}.bitsandbytes:functional"))),
    _lib("auto_gptq", MANUAL, "GPTQ CUDA kernels", "msModelSlim quantization / torch_npu.npu_weight_quant_batchmatmul"),
    _lib("gptqmodel", MANUAL, "GPTQ CUDA kernels", "msModelSlim quantization / torch_npu.npu_weight_quant_batchmatmul"),
    _lib("awq", MANUAL, "AWQ CUDA kernels", "msModelSlim quantization / torch_npu.npu_weight_quant_batchmatmul"),
    _lib("exllamav2", MANUAL, "ExLlamaV2 CUDA kernels", "vllm-ascend or MindIE for quantized inference"),
    _lib("marlin", MANUAL, "Marlin int4 GEMM (CUDA)", "torch_npu.npu_weight_quant_batchmatmul"),
    # kernels / compilers
    _lib("triton", MANUAL, "Triton GPU kernels", "triton-ascend (port kernels), or torch / torch_npu ops"),
    _lib("liger_kernel", MANUAL, "Triton fused LLM kernels", "torch_npu fused ops (npu_rms_norm, npu_swiglu, npu_rotary_mul)"),
    _lib("unsloth", MANUAL, "Triton-based fine-tuning kernels", "plain transformers/peft training on torch_npu"),
    _lib("mamba_ssm", MANUAL, "Mamba selective-scan CUDA kernels",
                         "the library's selective_scan_ref (pure PyTorch) or a chunked scan in torch"),
    _lib("selective_scan_cuda", MANUAL, "Mamba selective-scan CUDA module", "selective_scan_ref (pure PyTorch)"),
    _lib("causal_conv1d", MANUAL, "causal depthwise conv1d CUDA kernel",
                             "F.conv1d with padding=k-1 and groups=C, keeping the first L outputs (the reference implementation)"),
    _lib("torch_tensorrt", MANUAL, "TensorRT compilation", "torchair (torch.compile NPU backend) or ATC/OM models for MindIE"),
    _lib("tensorrt", MANUAL, "NVIDIA TensorRT runtime", "ATC-converted OM models with ACL / MindIE"),
    _lib("pycuda", MANUAL, "raw CUDA driver bindings", "torch.npu APIs, or pyACL (acl) for low-level control"),
    _lib("cuda", MANUAL, "cuda-python driver/runtime bindings", "torch.npu APIs, or pyACL (acl)"),
    _lib("cupy", MANUAL, "NumPy on CUDA", "torch tensors on the NPU, or NumPy on the host"),
    _lib("numba.cuda", MANUAL, "Numba CUDA kernels", "torch operators on the NPU, or numba on the CPU"),
    _lib("cudf", MANUAL, "RAPIDS GPU DataFrames", "pandas / polars on the host"),
    _lib("cuml", MANUAL, "RAPIDS GPU machine learning", "scikit-learn on the host"),
    _lib("cugraph", MANUAL, "RAPIDS GPU graph analytics", "networkx / torch_geometric"),
    _lib("cucim", MANUAL, "RAPIDS GPU image processing", "scikit-image / torchvision"),
    _lib("nvidia.dali", MANUAL, "NVIDIA DALI data loading", "torchvision / torch DataLoader (DVPP via torchvision_npu)"),
    _lib("dali", MANUAL, "NVIDIA DALI data loading", "torchvision / torch DataLoader"),
    _lib("vllm", MANUAL, "vLLM serving", "install vllm-ascend (the out-of-tree platform plugin) with vllm"),
    # monitoring
    _lib("pynvml", MANUAL, "NVML device monitoring", "npu-smi, torch.npu.mem_get_info()/utilization()"),
    _lib("nvidia_smi", MANUAL, "NVML device monitoring", "npu-smi, torch.npu.mem_get_info()"),
    _lib("GPUtil", MANUAL, "nvidia-smi based GPU listing", "torch.npu.device_count() / mem_get_info()"),
    _lib("gpustat", MANUAL, "nvidia-smi based GPU status", "npu-smi info"),
    _lib("nvitop", MANUAL, "NVML device monitoring", "npu-smi info"),
    # geometric / 3D CUDA extensions
    _lib("torch_scatter", MANUAL, "scatter ops (CUDA extension)",
         "use torch.Tensor.scatter_reduce (native on the NPU), or install torch_scatter's CPU build and "
         "run it on host tensors"),
    _lib("torch_sparse", MANUAL, "sparse ops (CUDA extension)", "torch.sparse / torch_geometric native ops"),
    _lib("torch_cluster", MANUAL, "clustering ops (CUDA extension)", "CPU build on the host"),
    _lib("spconv", MANUAL, "sparse convolution (CUDA)", "no NPU build; dense conv or a host fallback"),
    _lib("MinkowskiEngine", MANUAL, "sparse tensor convolution (CUDA)", "no NPU build; dense conv"),
    _lib("pointnet2_ops", MANUAL, "PointNet++ CUDA ops", "mmcv's NPU ops or a pure-PyTorch reference"),
    _lib("detectron2._C", MANUAL, "detectron2 compiled ops", "torchvision.ops (NPU-supported) equivalents"),
    _lib("mmcv._ext", MANUAL, "mmcv compiled ops", "install the mmcv build for Ascend (MMCV_WITH_OPS=1 on NPU), which provides most ops"),
    _lib("kaolin", MANUAL, "NVIDIA 3D deep learning ops", "pure-PyTorch equivalents"),
    _lib("nvdiffrast", MANUAL, "NVIDIA differentiable rasterizer", "pytorch3d CPU rasterizer or a port"),
    _lib("tinycudann", MANUAL, "tiny-cuda-nn fused MLPs / hash grids", "plain torch MLPs and hash encodings"),
)

BY_NAME: dict[str, Library] = {r.name: r for r in RECORDS}

_XF = ("turns on xformers attention; under the shim the library finds ascend-compat's xformers drop-in, which runs "
       "memory_efficient_attention on the NPU (other xformers operators are missing)")
_FA2 = ("selects FlashAttention-2 kernels; on an NPU transformers runs this implementation with torch_npu's fused "
        "attention (and under the shim the ascend-compat flash_attn drop-in answers its imports)")
#: library calls that switch on a CUDA-only back-end, with the library's own Ascend alternative
SWITCHES: tuple[Switch, ...] = (
    Switch("enable_xformers_memory_efficient_attention", "diffusers", "xformers", PARTIAL, _XF,
           "use enable_npu_flash_attention() (diffusers' torch_npu attention processor) or keep the default SDPA "
           "attention."),
    Switch("set_use_memory_efficient_attention_xformers", "diffusers", "xformers", PARTIAL, _XF,
           "use enable_npu_flash_attention() (diffusers' torch_npu attention processor) or keep the default SDPA "
           "attention."),
    Switch("attn_implementation=flash_attention_2", "transformers", "flash_attn", PARTIAL, _FA2,
           'keep it, or use attn_implementation="sdpa" to compare with the default attention.'),
    Switch("use_flash_attention_2=True", "transformers", "flash_attn", PARTIAL, _FA2,
           'use attn_implementation="flash_attention_2" or "sdpa" (use_flash_attention_2 is deprecated).'),
    Switch("attn_implementation=flash_attention_3", "transformers", "flash_attn_interface", MANUAL,
           "selects FlashAttention-3, which runs only on NVIDIA Hopper GPUs", 'use attn_implementation="sdpa".'),
)
#: method name -> switch; (keyword, value) -> switch
SWITCH_CALLS: dict[str, Switch] = {s.call: s for s in SWITCHES if "=" not in s.call}
SWITCH_KEYWORDS: dict[tuple[str, str], Switch] = {tuple(s.call.split("=", 1)): s for s in SWITCHES if "=" in s.call}

#: top-level names: a file that mentions none of them cannot import a listed library
TOP_LEVEL_NAMES = frozenset(r.name.split(".")[0] for r in RECORDS)
#: the packages above a listed part that is not device-generic (``deepspeed`` above ``deepspeed.ops``): a use of
#: one (``deepspeed.ops.adam.FusedAdam``) can be a use of that part
PARENTS_OF_CUDA_PARTS = frozenset(".".join(r.name.split(".")[:n]) for r in RECORDS if r.verdict != AUTO
                                  for n in range(1, r.name.count(".") + 1))


def lookup(module: str) -> Optional[Library]:
    """The record for an imported module name (longest dotted prefix), or None."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        rec = BY_NAME.get(".".join(parts[:n]))
        if rec is not None:
            return rec
    return None


# ------------------------------------------------------------------ NVIDIA command-line tools
#: programs that exist only on NVIDIA hosts, and the Ascend tool to use instead (check's nvidia-smi rule
#: reports a command line that runs one)
NVIDIA_TOOLS: dict[str, str] = {
    "nvidia-smi": "npu-smi info",
    "nvidia-cuda-mps-control": "nothing: Ascend has no multi-process service; share an NPU between processes as is",
    "nvidia-cuda-mps-server": "nothing: Ascend has no multi-process service",
    "nvidia-settings": "npu-smi set",
    "nvprof": "msprof (CANN profiling)",
    "nsys": "msprof (CANN profiling)",
    "ncu": "msprof op (CANN operator profiling)",
    "nv-nsight-cu-cli": "msprof op (CANN operator profiling)",
    "cuda-memcheck": "the CANN memory checker (msSanitizer)",
    "compute-sanitizer": "the CANN memory checker (msSanitizer)",
    "dcgmi": "npu-smi info",
}

#: NVIDIA's shared libraries as code names them to load them (``ctypes.CDLL("libcudart.so")``) or to find them
#: (``glob("libcudart*.so*")``): the start of the file name, lower case -> what it is. None exists on an Ascend host;
#: the CANN counterparts are reached through torch_npu (or ACL's libascendcl.so for ctypes code).
NVIDIA_SHARED_LIBRARIES: dict[str, str] = {
    "libcudart": "the CUDA runtime", "cudart64": "the CUDA runtime", "libcuda.": "the CUDA driver API",
    "nvcuda": "the CUDA driver API", "libcublas": "cuBLAS", "cublas64": "cuBLAS", "libcudnn": "cuDNN",
    "cudnn64": "cuDNN", "libnccl": "NCCL", "libnvidia-ml": "NVML", "libnvrtc": "NVRTC", "nvrtc64": "NVRTC",
    "libcufft": "cuFFT", "libcurand": "cuRAND", "libcusparse": "cuSPARSE", "libcusolver": "cuSOLVER",
    "libnvtoolsext": "NVTX", "libnvjitlink": "nvJitLink",
}
NVIDIA_SHARED_LIBRARY_ADVICE = ("the CANN libraries through torch_npu (ACL's libascendcl.so for code that loads a "
                                "runtime with ctypes)")


def nvidia_shared_library(value: str) -> Optional[str]:
    """What NVIDIA library a file name or path names (``/usr/local/cuda/lib64/libcudart.so.12``), or None."""
    base = value.strip().replace("\\", "/").rsplit("/", 1)[-1].lower()
    for prefix, what in NVIDIA_SHARED_LIBRARIES.items():
        if base.startswith(prefix) and (".so" in base or ".dll" in base or "*" in base or base.endswith(".")):
            return what
    return None
