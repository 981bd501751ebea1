"""A DeepSpeed ZeRO training script, as written for GPUs (prints one RESULT JSON per rank).

Usage (2 ranks): torchrun --nproc_per_node 2 -m ascend_compat run --simulate ds_train.py [--stage N] [--apply]
                [--zero-init] [--offload]  (stage 3: build the model under deepspeed.zero.Init; optimizer on the CPU)
            or: ascend-compat run --simulate --devices 2 $(which deepspeed) --num_gpus 2 ds_train.py
"""
import argparse
import json
import os

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--stage", type=int, default=2)
ap.add_argument("--apply", action="store_true")
ap.add_argument("--zero-init", action="store_true")
ap.add_argument("--offload", action="store_true")
ap.add_argument("--local_rank", type=int, default=-1)  # passed by the deepspeed launcher
args = ap.parse_args()
if args.apply:
    from ascend_compat.ecosystem.integrations import deepspeed_patch

    deepspeed_patch.apply()

import deepspeed  # noqa: E402
import torch.distributed as dist  # noqa: E402
from deepspeed.accelerator import get_accelerator  # noqa: E402


def emit(report):
    """One RESULT line in a single write (ranks share the pipe; PYTHONUNBUFFERED splits print())."""
    os.write(1, ("RESULT " + json.dumps(report) + "\n").encode())


def main():
    deepspeed.init_distributed(dist_backend="nccl")  # what GPU scripts say
    torch.manual_seed(0)
    zero = {"stage": args.stage, "reduce_bucket_size": 1000, "allgather_bucket_size": 1000}
    if args.offload:
        zero["offload_optimizer"] = {"device": "cpu"}
    config = {
        "train_micro_batch_size_per_gpu": 8,
        "gradient_accumulation_steps": 1,
        "zero_optimization": zero,
        "zero_allow_untested_optimizer": True,
        "zero_force_ds_cpu_optimizer": False,
        "steps_per_print": 1000,
        "wall_clock_breakdown": False,
    }
    with deepspeed.zero.Init(config_dict_or_path=config, enabled=args.zero_init):
        model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=opt, config=config)
    rank = dist.get_rank()
    g = torch.Generator().manual_seed(100 + rank)  # each rank its own data shard
    x = torch.randn(64, 8, generator=g)
    y = x.sum(1, keepdim=True)
    losses = []
    for epoch in range(4):
        total = 0.0
        for i in range(0, 64, 8):
            xb, yb = x[i:i + 8].to(engine.device), y[i:i + 8].to(engine.device)
            loss = torch.nn.functional.mse_loss(engine(xb), yb)
            engine.backward(loss)
            engine.step()
            total += loss.item()
        losses.append(total / 8)
    with deepspeed.zero.GatheredParameters(engine.module[0].weight, enabled=args.stage == 3):
        w = engine.module[0].weight.detach().clone()
    ref = w.clone()
    dist.broadcast(ref, 0)
    emit({
        "rank": rank, "world": dist.get_world_size(), "accelerator": get_accelerator()._name,
        "comm": get_accelerator().communication_backend_name(), "dist_backend": dist.get_backend(),
        "device": str(engine.device), "param_device": str(w.device), "stage": engine.zero_optimization_stage(),
        "losses": losses, "in_sync": bool((w == ref).all()), "local_rank": os.environ.get("LOCAL_RANK"),
    })


main()
