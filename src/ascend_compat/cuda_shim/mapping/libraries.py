"""Library detection points that must see the real CUDA answer (data, no code).

While the shim is active ``torch.cuda.is_available()`` is True, so scripts take their accelerator
path. Library code that would then pick CUDA-only kernels or settings is called with the real
answer instead. Each row: (distribution, minimum version, "module:qualified.name"). A row applies
only when the installed distribution is at least that version, and only once its module is
imported (an import hook; ascend-compat never imports these libraries itself).

Coverage: every entry of torch_npu 2.14.0's ``contrib/apis_config.json`` plus DeepSpeed and
Lightning detection points.
"""
from __future__ import annotations

LIBRARY_DETECTION_POINTS: list[tuple[str, str, str]] = [
    # transformers
    ("transformers", "4.32.0", "transformers.training_args:TrainingArguments.__post_init__"),
    ("transformers", "4.32.0", "transformers.trainer:Trainer._load_rng_state"),
    ("transformers", "4.32.0", "transformers.trainer:Trainer._save_rng_state"),
    ("transformers", "4.32.0", "transformers.trainer_utils:TrainerMemoryTracker.start"),
    ("transformers", "4.32.0", "transformers.utils.import_utils:is_torch_cuda_available"),
    ("transformers", "4.32.0", "transformers.utils.import_utils:is_mamba_ssm_available"),
    ("transformers", "4.32.0", "transformers.utils.import_utils:is_causal_conv1d_available"),
    ("transformers", "4.32.0", "transformers.utils.import_utils:is_torch_bf16_gpu_available"),
    ("transformers", "4.32.0", "transformers.utils.import_utils:is_torch_tf32_available"),
    ("transformers", "4.32.0", "transformers.utils.import_utils:is_bitsandbytes_available"),
    ("transformers", "4.32.0", "transformers.utils.import_utils:is_flash_attn_2_available"),
    ("transformers", "4.32.0", "transformers.utils.import_utils:is_flash_attn_3_available"),
    ("transformers", "4.32.0", "transformers.utils.import_utils:is_torch_fp16_available_on_device"),
    # trl
    ("trl", "0.7.1", "trl.import_utils:is_bitsandbytes_available"),
    ("trl", "0.7.1", "trl.trainer.utils:get_kbit_device_map"),
    # peft
    ("peft", "0.5.0", "peft.utils.other:infer_device"),
    # accelerate
    ("accelerate", "0.22.0", "accelerate.commands.env:env_command"),
    ("accelerate", "0.22.0", "accelerate.launchers:notebook_launcher"),
    ("accelerate", "0.22.0", "accelerate.commands.config.default:write_basic_config"),
    ("accelerate", "0.22.0", "accelerate.utils.environment:override_numa_affinity"),
    ("accelerate", "0.22.0", "accelerate.utils.modeling:get_max_memory"),
    ("accelerate", "0.22.0", "accelerate.utils.megatron_lm:initialize"),
    ("accelerate", "0.22.0", "accelerate.utils.bnb:load_and_quantize_model"),
    ("accelerate", "0.22.0", "accelerate.utils.bnb:get_quantized_model_device_map"),
    ("accelerate", "0.22.0", "accelerate.utils.imports:is_cuda_available"),
    ("accelerate", "0.22.0", "accelerate.state:PartialState._prepare_backend"),
    ("accelerate", "0.22.0", "accelerate.test_utils.scripts.test_script:training_check"),
    ("accelerate", "0.22.0", "accelerate.test_utils.scripts.test_cli:main"),
    ("accelerate", "0.22.0",
     "accelerate.test_utils.scripts.external_deps.test_peak_memory_usage:TorchTracemalloc.__enter__"),
    ("accelerate", "0.22.0",
     "accelerate.test_utils.scripts.external_deps.test_peak_memory_usage:TorchTracemalloc.__exit__"),
    # DeepSpeed: accelerator auto-detection (DS_ACCELERATOR still wins)
    ("deepspeed", "0.10.0", "deepspeed.accelerator.real_accelerator:get_accelerator"),
    ("deepspeed", "0.10.0", "deepspeed.accelerator.real_accelerator:is_current_accelerator_supported"),
    # Lightning (unified package and standalone packages)
    ("lightning", "2.0.0", "lightning.fabric.accelerators.cuda:CUDAAccelerator.is_available"),
    ("lightning", "2.0.0", "lightning.fabric.accelerators.cuda:num_cuda_devices"),
    ("lightning", "2.0.0", "lightning.fabric.accelerators.cuda:is_cuda_available"),
    ("lightning", "2.0.0", "lightning.pytorch.accelerators.cuda:CUDAAccelerator.is_available"),
    ("lightning-fabric", "2.0.0", "lightning_fabric.accelerators.cuda:CUDAAccelerator.is_available"),
    ("lightning-fabric", "2.0.0", "lightning_fabric.accelerators.cuda:num_cuda_devices"),
    ("lightning-fabric", "2.0.0", "lightning_fabric.accelerators.cuda:is_cuda_available"),
    ("pytorch-lightning", "2.0.0", "pytorch_lightning.accelerators.cuda:CUDAAccelerator.is_available"),
]
