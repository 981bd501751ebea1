"""A DeepSpeed ZeRO training script as written for GPUs: an MLP in bf16 with DeepSpeed's AdamW (torch's
implementation), ZeRO stage ``--stage``; prints the device's peak memory. Launched by torchrun (or planned
with ``plan --devices N``)."""
import argparse

import deepspeed
import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--stage", type=int, default=2)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--local_rank", type=int, default=0)
a = p.parse_args()
model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))
cfg = {"train_micro_batch_size_per_gpu": 8, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "torch_adam": True}},
       "zero_optimization": {"stage": a.stage, "reduce_bucket_size": 50_000_000}, "bf16": {"enabled": True}}
engine, opt, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
for step in range(a.steps):
    x = torch.randn(8, 1024, device=engine.device, dtype=torch.bfloat16)
    loss = engine(x).float().pow(2).mean()
    engine.backward(loss)
    engine.step()
print(f"max_allocated {torch.cuda.max_memory_allocated()} max_reserved {torch.cuda.max_memory_reserved()}")
