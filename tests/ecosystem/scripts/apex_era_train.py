"""An apex-era (2019-2022 NVIDIA examples style) training script, written for the test suite.

CUDA/apex idioms: ``.cuda()``, ``torch.cuda.set_device``, ``backend="nccl"`` under torchrun,
``from apex import amp`` with ``amp.initialize(model, optimizer, opt_level=...)`` and
``amp.scale_loss``, ``apex.optimizers.FusedAdam``/``FusedLAMB``, ``apex.parallel.DistributedDataParallel``
with ``convert_syncbn_model``, ``apex.normalization.FusedLayerNorm``, checkpointing ``amp.state_dict()``.
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn

try:
    from apex import amp
    from apex.normalization import FusedLayerNorm
    from apex.optimizers import FusedAdam, FusedLAMB
    from apex.parallel import DistributedDataParallel as DDP
    from apex.parallel import convert_syncbn_model
except ImportError:
    raise ImportError("Please install apex from https://www.github.com/nvidia/apex to run this example.")

parser = argparse.ArgumentParser()
parser.add_argument("--opt-level", default="O1")
parser.add_argument("--optimizer", default="adam")
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--checkpoint", default="")
parser.add_argument("--sync-bn", type=int, default=1)
args = parser.parse_args()

distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
local_rank = int(os.environ.get("LOCAL_RANK", "0"))
if distributed:
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl", init_method="env://")
torch.manual_seed(0)

model = nn.Sequential(
    nn.Conv1d(4, 16, 3, padding=1), nn.BatchNorm1d(16), nn.ReLU(), nn.Flatten(),
    nn.Linear(16 * 8, 32), FusedLayerNorm(32), nn.ReLU(), nn.Linear(32, 2))
if distributed and args.sync_bn:
    model = convert_syncbn_model(model)
model = model.cuda()
opt_cls = {"adam": FusedAdam, "lamb": FusedLAMB}[args.optimizer]
optimizer = opt_cls(model.parameters(), lr=3e-3)
model, optimizer = amp.initialize(model, optimizer, opt_level=args.opt_level)
if distributed:
    model = DDP(model, delay_allreduce=True)

g = torch.Generator().manual_seed(1)
x = torch.randn(64, 4, 8, generator=g)
y = (x.mean(dim=(1, 2)) > 0).long()
losses = []
for step in range(args.steps):
    xb, yb = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    out = model(xb)
    loss = nn.functional.cross_entropy(out.float(), yb)
    optimizer.zero_grad()
    with amp.scale_loss(loss, optimizer) as scaled_loss:
        scaled_loss.backward()
    optimizer.step()
    losses.append(loss.item())

if args.checkpoint and (not distributed or dist.get_rank() == 0):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "amp": amp.state_dict()},
               args.checkpoint)
    ckpt = torch.load(args.checkpoint)
    amp.load_state_dict(ckpt["amp"])

first_param = next(model.parameters())
print(f"RESULT device={first_param.device} param_dtype={first_param.dtype} out_dtype={out.dtype} "
      f"first={losses[0]:.4f} last={sum(losses[-5:]) / 5:.4f} loss_scale={amp.state_dict()['loss_scaler0']['loss_scale']} "
      f"world={dist.get_world_size() if distributed else 1} wrapper={type(model).__name__}")
