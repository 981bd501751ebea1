"""FSDP2 (``fully_shard``) training over the simulated hccl backend, rank r on ``npu:<LOCAL_RANK>``.

Launched by tests/simulator/test_distributed.py as
``torchrun --standalone --nproc-per-node=2 dist_fsdp2_train.py OUT_DIR STEPS``. FSDP2 frees each
unsharded parameter after use with ``storage.resize_(0)`` and regrows it before the next all-gather,
so this needs in-place npu storage resizing. Every rank builds the same model (seed 0), trains on
its own batches (seeded by rank) and writes ``OUT_DIR/rank<r>.json``: losses, its shards' devices,
the full parameters after training, and the device memory before the first step and after each.
The test checks them against a CPU reference it computes itself.
"""
import json
import os
import sys
from datetime import timedelta

import ascend_compat.simulator as simulator

simulator.install_from_env()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed.fsdp import fully_shard  # noqa: E402

out_dir, steps = sys.argv[1], int(sys.argv[2])
local_rank = int(os.environ["LOCAL_RANK"])
torch.npu.set_device(local_rank)
device = torch.device(f"npu:{local_rank}")

dist.init_process_group("hccl", timeout=timedelta(seconds=60))
rank = dist.get_rank()

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)).to(device)
for layer in (model[0], model[2]):
    fully_shard(layer)
fully_shard(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
data = torch.Generator().manual_seed(100 + rank)

memory = [torch.npu.memory_allocated(device)]
losses = []
for _ in range(steps):
    x = torch.randn(4, 8, generator=data).to(device)
    y = torch.randint(0, 3, (4,), generator=data).to(device)
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
    memory.append(torch.npu.memory_allocated(device))

params = {k: v.full_tensor().cpu().tolist() for k, v in model.state_dict().items()}
report = {
    "rank": rank,
    "shard_devices": sorted({str(p.to_local().device) for p in model.parameters()}),
    "losses": losses,
    "params": params,
    "memory": memory,
}
dist.destroy_process_group()
with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as fh:
    json.dump(report, fh)
