"""When the memory of a tensor handed to a collective is released: at its own last reference, every time.

Launched by tests/simulator/test_distributed.py as ``torchrun --standalone --nproc-per-node=2
dist_release.py OUT_DIR``. Each rank (on its own simulated ``npu:0``) all-reduces, all-gathers and
reduce-scatters fresh tensors 100 times each, drops them, and counts how often ``memory_allocated()``
had not come back to where it was: gloo's worker thread drops a finished work's tensors on its own time,
and when that released the npu memory, the count was a run-to-run accident. Writes ``OUT_DIR/rank<r>.json``.
"""
import json
import os
import sys

import ascend_compat.simulator as simulator

simulator.install_from_env()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group("hccl")
torch.npu.set_device(0)
world = dist.get_world_size()
late = {"all_reduce": 0, "all_gather_into_tensor": 0, "reduce_scatter_tensor": 0}
base = torch.npu.memory_allocated()
for _ in range(100):
    for name in late:
        x = torch.ones(1 << 16, device="npu")
        if name == "all_reduce":
            dist.all_reduce(x)
        elif name == "all_gather_into_tensor":
            out = torch.empty(world << 16, device="npu")
            dist.all_gather_into_tensor(out, x)
            del out
        else:
            out = torch.empty((1 << 16) // world, device="npu")
            dist.reduce_scatter_tensor(out, x)
            del out
        del x
        now = torch.npu.memory_allocated()
        late[name] += now != base
        base = now
with open(os.path.join(sys.argv[1], f"rank{dist.get_rank()}.json"), "w") as fh:
    json.dump({"late": late}, fh)
dist.destroy_process_group()
