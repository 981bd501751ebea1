"""Meta-device initialisation of sharded models, as torchtitan does it, written for CUDA (for the test suite).

Run under torchrun (2 ranks). Two models are built on the ``meta`` device, sharded, materialised with
``to_empty(device="cuda")`` and initialised with ``reset_parameters()``, so every init kernel is a
DTensor random op (DTensor's ``OffsetBasedRNGTracker`` reads and writes the Philox offset in bytes 8-16 of
``torch.cuda.get_rng_state()``):

- FSDP2: ``fully_shard`` on each layer and the root (parameters ``Shard(0)`` over 2 ranks);
- tensor parallel: ``ColwiseParallel`` / ``RowwiseParallel`` (the row-parallel bias is ``Replicate``),
  then dropout on a replicated activation.

Each rank prints one ``RESULT {json}`` line: the gathered FSDP2 parameters, the TP shards, the RNG
state's size and offset, whether the replicated tensors agree with rank 0's, and two training losses.
"""
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import Replicate, distribute_tensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Linear(8, 16)
        self.w2 = nn.Linear(16, 8)

    def forward(self, x):
        return self.w2(torch.relu(self.w1(x)))


def init_weights(model):
    with torch.no_grad():
        for module in model.modules():
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()


def same_as_rank0(t):
    ref = t.detach().clone()
    dist.broadcast(ref, 0)
    return bool(torch.equal(ref, t.detach()))


def offset():
    return int(torch.cuda.get_rng_state()[8:].view(torch.int64).item())


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    mesh = init_device_mesh("cuda", (dist.get_world_size(),))
    torch.manual_seed(0)
    report = {"rank": rank, "state_bytes": torch.cuda.get_rng_state().numel()}

    # FSDP2, torchtitan's order: meta model, fully_shard, to_empty, init
    with torch.device("meta"):
        fsdp = MLP()
    for layer in (fsdp.w1, fsdp.w2):
        fully_shard(layer, mesh=mesh)
    fully_shard(fsdp, mesh=mesh)
    fsdp.to_empty(device="cuda")
    init_weights(fsdp)
    report["fsdp_local_device"] = str(fsdp.w1.weight.to_local().device)
    report["fsdp_params"] = {k: v.full_tensor().cpu().tolist() for k, v in fsdp.state_dict().items()}
    report["offset_after_fsdp_init"] = offset()

    # tensor parallel on a meta model
    with torch.device("meta"):
        tp = MLP()
    parallelize_module(tp, mesh, {"w1": ColwiseParallel(), "w2": RowwiseParallel()})
    tp.to_empty(device="cuda")
    init_weights(tp)
    report["tp_w1_local"] = tp.w1.weight.to_local().cpu().tolist()
    report["tp_w2_bias_placements"] = str(tp.w2.bias.placements)
    report["tp_replicated_bias_agrees"] = same_as_rank0(tp.w2.bias.to_local())
    x = distribute_tensor(torch.ones(4, 8, device="cuda"), mesh, [Replicate()])
    dropped = torch.nn.functional.dropout(x, 0.5)  # a random op on a replicated DTensor
    report["replicated_dropout_agrees"] = same_as_rank0(dropped.to_local())
    report["replicated_dropout_kept"] = int((dropped.to_local() != 0).sum().item())
    report["offset_end"] = offset()

    # both models train
    losses = []
    opt = torch.optim.SGD(list(fsdp.parameters()) + list(tp.parameters()), lr=0.05)
    data = torch.Generator().manual_seed(7)
    inp = torch.randn(16, 8, generator=data).cuda()
    target = inp.flip(1)
    for _ in range(3):
        opt.zero_grad()
        loss = nn.functional.mse_loss(fsdp(inp), target) + nn.functional.mse_loss(tp(inp), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    report["losses"] = losses
    dist.destroy_process_group()
    os.write(1, ("RESULT " + json.dumps(report) + "\n").encode())


main()
