"""torch.multiprocessing.spawn and a multiprocessing spawn-context Process, two ranks each."""
import multiprocessing as mp

import torch
import torch.multiprocessing as tmp


def work(rank):
    torch.cuda.set_device(rank)
    x = torch.ones(2).cuda()
    print(f"TMP rank={rank} device={x.device}", flush=True)


def work_mp(rank, queue):
    torch.cuda.set_device(rank)
    queue.put(f"MP rank={rank} device={torch.ones(1, device='cuda').device}")


if __name__ == "__main__":
    tmp.spawn(work, nprocs=2, join=True)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=work_mp, args=(r, queue)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    for _ in procs:
        print(queue.get(), flush=True)
