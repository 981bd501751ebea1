"""DDP training over the simulated hccl backend, rank r on ``npu:<LOCAL_RANK>``.

Launched by tests/simulator/test_distributed.py as
``torchrun --standalone --nproc-per-node=2 dist_ddp_train.py OUT_DIR STEPS``. Each rank builds
the model from its own seed (DDP must broadcast rank 0's parameters), trains on its own
batches (seeded by rank), and writes ``OUT_DIR/rank<r>.json`` with its losses, the devices of
its parameters and gradients, and its final parameters. The test checks them against a CPU
reference it computes itself.
"""
import sys

from _rank import finish, start, train

rank, device = start()

import torch  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

out_dir, steps = sys.argv[1], int(sys.argv[2])

torch.manual_seed(rank)  # different on purpose: DDP must broadcast rank 0's parameters
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)).to(device)
ddp = DDP(model, device_ids=[device.index])
losses = train(ddp, device, rank, steps)

report = {
    "rank": rank,
    "device_count": torch.npu.device_count(),
    "param_devices": sorted({str(p.device) for p in model.parameters()}),
    "grad_devices": sorted({str(p.grad.device) for p in model.parameters()}),
    "losses": losses,
    "params": {k: v.cpu().tolist() for k, v in model.state_dict().items()},
}
finish(out_dir, rank, report)
