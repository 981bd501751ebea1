"""A plain CUDA-style DDP training job for the multi-node rehearsals (launched by
``ascend-compat run --simulate --nodes 2 --devices 2 cluster_job.py STEPS``): the set-up a
cluster script does (env:// rendezvous from torchrun, the local rank's device), a few SGD
steps with DDP's gradient all-reduce, a metric all-reduce each step, and a final line per
rank. Faults come from ``ASCEND_COMPAT_SIM_FAULTS``; the script knows nothing of them."""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
dist.init_process_group(backend="nccl")
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).cuda(),
            device_ids=[local_rank])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.Generator().manual_seed(rank)
for step in range(steps):
    x = torch.randn(8, 16, generator=data).cuda()
    y = torch.randint(0, 4, (8,), generator=data).cuda()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    metric = loss.detach().clone()
    dist.all_reduce(metric)
print(f"rank {rank} of {dist.get_world_size()} on {torch.cuda.current_device()} "
      f"({torch.cuda.device_count()} devices): done, mean loss {metric.item() / dist.get_world_size():.4f}", flush=True)
dist.destroy_process_group()
