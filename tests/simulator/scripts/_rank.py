"""What the torchrun scripts here share: a rank on the simulated NPU joining the hccl group, the
small training run the DDP and FSDP2 scripts both do, and the rank's JSON report."""
import json
import os
from datetime import timedelta

import ascend_compat.simulator as simulator


def start():
    """Install the simulator (configured from the environment), make ``npu:<LOCAL_RANK>`` this
    process's device and join the hccl group; return ``(rank, device)``."""
    simulator.install_from_env()
    import torch
    import torch.distributed as dist

    local_rank = int(os.environ["LOCAL_RANK"])
    torch.npu.set_device(local_rank)
    dist.init_process_group("hccl", timeout=timedelta(seconds=60))
    return dist.get_rank(), torch.device(f"npu:{local_rank}")


def train(module, device, rank: int, steps: int, after_step=None) -> list:
    """SGD with momentum on this rank's batches (4 x 8 inputs, 3 classes, seeded by rank); the losses.
    ``after_step()`` runs after every step. test_distributed.py's ``_cpu_training`` is the reference."""
    import torch

    opt = torch.optim.SGD(module.parameters(), lr=0.1, momentum=0.9)
    data = torch.Generator().manual_seed(100 + rank)
    losses = []
    for _ in range(steps):
        x = torch.randn(4, 8, generator=data).to(device)
        y = torch.randint(0, 3, (4,), generator=data).to(device)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(module(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if after_step is not None:
            after_step()
    return losses


def finish(out_dir: str, rank: int, report: dict) -> None:
    """Leave the process group and write ``OUT_DIR/rank<r>.json``."""
    import torch.distributed as dist

    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as fh:
        json.dump(report, fh)
