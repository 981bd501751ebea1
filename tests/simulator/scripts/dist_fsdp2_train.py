"""FSDP2 (``fully_shard``) training over the simulated hccl backend, rank r on ``npu:<LOCAL_RANK>``.

Launched by tests/simulator/test_distributed.py as
``torchrun --standalone --nproc-per-node=2 dist_fsdp2_train.py OUT_DIR STEPS``. FSDP2 frees each
unsharded parameter after use with ``storage.resize_(0)`` and regrows it before the next all-gather,
so this needs in-place npu storage resizing. Every rank builds the same model (seed 0), trains on
its own batches (seeded by rank) and writes ``OUT_DIR/rank<r>.json``: losses, its shards' devices,
the full parameters after training, and the device memory before the first step and after each.
The test checks them against a CPU reference it computes itself.
"""
import sys

from _rank import finish, start, train

rank, device = start()

import torch  # noqa: E402
from torch.distributed.fsdp import fully_shard  # noqa: E402

out_dir, steps = sys.argv[1], int(sys.argv[2])

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)).to(device)
for layer in (model[0], model[2]):
    fully_shard(layer)
fully_shard(model)

memory = [torch.npu.memory_allocated(device)]
losses = train(model, device, rank, steps, after_step=lambda: memory.append(torch.npu.memory_allocated(device)))

report = {
    "rank": rank,
    "shard_devices": sorted({str(p.to_local().device) for p in model.parameters()}),
    "losses": losses,
    "params": {k: v.full_tensor().cpu().tolist() for k, v in model.state_dict().items()},
    "memory": memory,
}
finish(out_dir, rank, report)
