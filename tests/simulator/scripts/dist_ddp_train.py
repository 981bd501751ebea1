"""DDP training over the simulated hccl backend, rank r on ``npu:<LOCAL_RANK>``.

Launched by tests/simulator/test_distributed.py as
``torchrun --standalone --nproc-per-node=2 dist_ddp_train.py OUT_DIR STEPS``. Each rank builds
the model from its own seed (DDP must broadcast rank 0's parameters), trains on its own
batches (seeded by rank), and writes ``OUT_DIR/rank<r>.json`` with its losses, the devices of
its parameters and gradients, and its final parameters. The test checks them against a CPU
reference it computes itself.
"""
import json
import os
import sys
from datetime import timedelta

import ascend_compat.simulator as simulator

simulator.install_from_env()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

out_dir, steps = sys.argv[1], int(sys.argv[2])
local_rank = int(os.environ["LOCAL_RANK"])
torch.npu.set_device(local_rank)
device = torch.device(f"npu:{local_rank}")

dist.init_process_group("hccl", timeout=timedelta(seconds=60))
rank = dist.get_rank()

torch.manual_seed(rank)  # different on purpose: DDP must broadcast rank 0's parameters
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)).to(device)
ddp = DDP(model, device_ids=[local_rank])
opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
data = torch.Generator().manual_seed(100 + rank)

losses = []
for _ in range(steps):
    x = torch.randn(4, 8, generator=data).to(device)
    y = torch.randint(0, 3, (4,), generator=data).to(device)
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(ddp(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())

report = {
    "rank": rank,
    "device_count": torch.npu.device_count(),
    "param_devices": sorted({str(p.device) for p in model.parameters()}),
    "grad_devices": sorted({str(p.grad.device) for p in model.parameters()}),
    "losses": losses,
    "params": {k: v.cpu().tolist() for k, v in model.state_dict().items()},
}
dist.destroy_process_group()
with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as fh:
    json.dump(report, fh)
