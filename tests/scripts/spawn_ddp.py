"""DDP launched with ``torch.multiprocessing.spawn`` (the ImageNet example's --multiprocessing-distributed
path), written for the test suite: ``ngpus = torch.cuda.device_count()``, one process per GPU,
``init_process_group("nccl", init_method="tcp://...")``, ``torch.cuda.set_device(gpu)``,
``model.cuda(gpu)``, ``DDP(device_ids=[gpu])``.
"""
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def worker(gpu, ngpus, port):
    dist.init_process_group(backend="nccl", init_method=f"tcp://127.0.0.1:{port}", world_size=ngpus, rank=gpu)
    torch.cuda.set_device(gpu)
    torch.manual_seed(0)
    model = nn.Linear(4, 2).cuda(gpu)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[gpu])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    x = torch.randn(8, 4).cuda(gpu, non_blocking=True) + gpu  # different data per rank
    ddp(x).pow(2).mean().backward()
    opt.step()
    w = model.weight.detach().clone()
    gathered = [torch.zeros_like(w) for _ in range(ngpus)]
    dist.all_gather(gathered, w)
    same = all(torch.equal(g, gathered[0]) for g in gathered)
    if gpu == 0:
        print(f"RESULT device={model.weight.device} ranks={ngpus} replicas_equal={same} backend={dist.get_backend()}")
        sys.stdout.flush()
    dist.destroy_process_group()


def main():
    ngpus = torch.cuda.device_count()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, nprocs=ngpus, args=(ngpus, port))


if __name__ == "__main__":
    main()
