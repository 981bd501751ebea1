"""A small CNN (conv, BatchNorm, pooling) trained with SGD + momentum: CUDA code as users write it."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()

model = nn.Sequential(
    nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
    nn.Flatten(), nn.Linear(64, 10),
).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for step in range(a.steps):
    x = torch.randn(a.batch_size, 3, 64, 64, device="cuda")
    y = torch.randint(0, 10, (a.batch_size,), device="cuda")
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}")
print(f"max_allocated {torch.cuda.max_memory_allocated()} max_reserved {torch.cuda.max_memory_reserved()}")
