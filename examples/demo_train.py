"""Train a small classifier on the simulated Ascend NPU (no NPU, no CUDA, no CANN needed).

Run: ``python examples/demo_train.py [--steps N] [--amp]``. The script installs the simulated
NPU itself, then uses the same code a real Ascend machine runs with torch_npu: tensors and the
model on ``npu:0``, AdamW, optional float16 autocast with GradScaler.
"""
from __future__ import annotations

import argparse
import time

import torch
from torch import nn

from ascend_compat import simulator


def make_data(n: int = 512, seed: int = 0):
    """Two interleaved spirals: a small problem a 2-layer MLP learns in a few hundred steps."""
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(n, generator=g) * 3 * torch.pi
    label = torch.randint(0, 2, (n,), generator=g)
    r = t / (3 * torch.pi)
    angle = t + label * torch.pi
    x = torch.stack([r * torch.cos(angle), r * torch.sin(angle)], 1) + 0.02 * torch.randn(n, 2, generator=g)
    return x, label


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--amp", action="store_true", help="train under torch.autocast('npu', float16)")
    args = parser.parse_args(argv)

    cfg = simulator.install()
    device = torch.device("npu:0")
    print(f"simulated NPU installed: {torch.npu.device_count()} device(s), SoC {cfg.soc}, "
          f"torch {torch.__version__}")
    torch.manual_seed(0)
    x, y = (t.to(device) for t in make_data())
    model = nn.Sequential(nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler("npu", enabled=args.amp)
    print(f"model on {next(model.parameters()).device}, data on {x.device}, amp={args.amp}")
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        opt.zero_grad()
        with torch.autocast("npu", dtype=torch.float16, enabled=args.amp):
            loss = nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if step == 1 or step % 50 == 0 or step == args.steps:
            acc = (model(x).argmax(1) == y).float().mean().item()
            print(f"step {step:4d}  loss {loss.item():.4f}  accuracy {acc:.3f}  device {loss.device}")
    elapsed = time.perf_counter() - start
    mem = torch.npu.max_memory_allocated() if hasattr(torch.npu, "max_memory_allocated") else None
    print(f"done in {elapsed:.1f} s" + (f", peak npu memory {mem / 1024:.1f} KiB" if mem is not None else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
