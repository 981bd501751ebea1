"""Run every collective of the simulated hccl backend once and report what each rank saw.

Launched by tests/simulator/test_distributed.py as
``torchrun --standalone --nproc-per-node=2 dist_collectives.py OUT_DIR``. Rank r works on
``npu:<LOCAL_RANK>`` and writes ``OUT_DIR/rank<r>.json``: the values each collective left in
its tensors and the messages of the errors it provoked. The test computes the expected values
itself; this script only reports.
"""
import json
import os
import sys
from datetime import timedelta

import ascend_compat.simulator as simulator

simulator.install_from_env()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

out_dir = sys.argv[1]
local_rank = int(os.environ["LOCAL_RANK"])
torch.npu.set_device(local_rank)
dev = torch.device("npu", local_rank)

report = {
    "device_count": torch.npu.device_count(),
    "default_map_npu": dist.Backend.default_device_backend_map.get("npu"),
    "is_hccl_available": dist.is_hccl_available(),
}
dist.init_process_group("hccl", timeout=timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
report.update(rank=rank, world=world, backend=dist.get_backend(), device=str(dev))
values = report["values"] = {}
devices = report["devices"] = {}
errors = report["errors"] = {}


def keep(name, t):
    values[name] = t.cpu().tolist()
    devices[name] = str(t.device)


def expect_error(name, fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the message is what is reported
        errors[name] = f"{type(exc).__name__}: {exc}"
    else:
        errors[name] = None


def base():
    return torch.tensor([rank + 1.0, 2.0 * (rank + 1)], device=dev)


for op in ("SUM", "PRODUCT", "MIN", "MAX", "AVG"):
    t = base()
    dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
    keep(f"all_reduce_{op}", t)

t = torch.tensor([rank + 1, 10 * (rank + 1)], device=dev)
dist.all_reduce(t, op=dist.ReduceOp.AVG)
keep("all_reduce_AVG_int", t)
t = torch.tensor([rank == 0, False], device=dev)
dist.all_reduce(t)
keep("all_reduce_bool", t)
t = base().half()
dist.all_reduce(t)
keep("all_reduce_half", t)
t = base().bfloat16()
dist.all_reduce(t)
keep("all_reduce_bf16", t.float())
t = base()
work = dist.all_reduce(t, async_op=True)
report["async_wait"] = work.wait()
keep("all_reduce_async", t)
fut_value = work.get_future().wait()
report["async_future_devices"] = [str(x.device) for x in fut_value]

t = torch.tensor([7.0, 8.0], device=dev) if rank == 1 else torch.zeros(2, device=dev)
dist.broadcast(t, src=1)
keep("broadcast", t)

outs = [torch.zeros(2, device=dev) for _ in range(world)]
dist.all_gather(outs, base())
keep("all_gather", torch.stack(outs))

out = torch.zeros(2 * world, device=dev)
dist.all_gather_into_tensor(out, torch.tensor([10.0 * rank, 10.0 * rank + 1], device=dev))
keep("all_gather_into_tensor", out)

out = torch.zeros(1, device=dev)
dist.reduce_scatter(out, [torch.tensor([10.0 * j + rank], device=dev) for j in range(world)])
keep("reduce_scatter", out)

out = torch.zeros(2, device=dev)
dist.reduce_scatter_tensor(out, torch.arange(2.0 * world, device=dev) + 100 * rank)
keep("reduce_scatter_tensor", out)

out = torch.zeros(2, device=dev)
dist.reduce_scatter_tensor(out, torch.arange(2.0 * world, device=dev) + 100 * rank, op=dist.ReduceOp.AVG)
keep("reduce_scatter_tensor_AVG", out)

t = base()
dist.reduce(t, dst=0)
if rank == 0:
    keep("reduce", t)

gather_list = [torch.zeros(2, device=dev) for _ in range(world)] if rank == 0 else None
dist.gather(base(), gather_list, dst=0)
if rank == 0:
    keep("gather", torch.stack(gather_list))

t = torch.zeros(1, device=dev)
scatter_list = [torch.tensor([5.0 + j], device=dev) for j in range(world)] if rank == 0 else None
dist.scatter(t, scatter_list, src=0)
keep("scatter", t)

outs = [torch.zeros(1, device=dev) for _ in range(world)]
dist.all_to_all(outs, [torch.tensor([10.0 * rank + j], device=dev) for j in range(world)])
keep("all_to_all", torch.cat(outs))

out = torch.zeros(world, device=dev)
dist.all_to_all_single(out, torch.tensor([10.0 * rank + j for j in range(world)], device=dev))
keep("all_to_all_single", out)

# uneven splits: rank r sends r+1 elements to every peer
in_splits = [rank + 1] * world
out_splits = [s + 1 for s in range(world)]
out = torch.zeros(sum(out_splits), device=dev)
dist.all_to_all_single(out, torch.full((sum(in_splits),), float(rank), device=dev),
                       output_split_sizes=out_splits, input_split_sizes=in_splits)
keep("all_to_all_single_uneven", out)

dist.barrier()

if rank == 0:
    dist.send(torch.tensor([42.0, 43.0], device=dev), dst=1)
else:
    t = torch.zeros(2, device=dev)
    dist.recv(t, src=0)
    keep("send_recv", t)

peer = (rank + 1) % world
send_t = torch.tensor([100.0 + rank], device=dev)
recv_t = torch.zeros(1, device=dev)
reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, send_t, peer),
                               dist.P2POp(dist.irecv, recv_t, (rank - 1) % world)])
for req in reqs:
    req.wait()
keep("batch_isend_irecv", recv_t)

tensors = [base(), base() * 10]
with dist.distributed_c10d._coalescing_manager():
    for t in tensors:
        dist.all_reduce(t)
keep("coalesced_all_reduce", torch.cat(tensors))

sub = dist.new_group(list(range(world)))
t = base()
dist.all_reduce(t, group=sub)
keep("subgroup_all_reduce", t)
report["subgroup_backend"] = dist.get_backend(sub)
report["work_completed"] = dist.all_reduce(base(), async_op=True).is_completed()

objects = [None] * world
dist.all_gather_object(objects, {"rank": rank})
report["all_gather_object"] = objects
obj = [f"from rank {rank}"]
dist.broadcast_object_list(obj, src=1)
report["broadcast_object_list"] = obj

expect_error("BAND", lambda: dist.all_reduce(base(), op=dist.ReduceOp.BAND))
expect_error("cpu_tensor", lambda: dist.all_reduce(torch.ones(2)))
expect_error("non_contiguous", lambda: dist.all_reduce(torch.ones(3, 4, device=dev).t()))
dist.barrier()

dist.destroy_process_group()
with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as fh:
    json.dump(report, fh)
