"""Tensor parallelism with DTensor and ``F.scaled_dot_product_attention`` over the simulated hccl
backend, rank r on ``npu:<LOCAL_RANK>``.

Launched by tests/simulator/test_distributed.py as
``torchrun --standalone --nproc-per-node=2 dist_tp_sdpa.py OUT_DIR dtensor|local``. An attention block (q/k/v
projections column-parallel, output projection row-parallel, as in the FSDP2 + tensor-parallel
Llama example) is sharded over a 1-D npu device mesh; with ``dtensor`` q/k/v stay DTensors
(``use_local_output=False``) so SDPA runs on DTensors sharded over the heads, with ``local`` on
each rank's local heads (torchtitan's layout). With DTensors, torch_npu's SDPA kernel calls
``npu_fusion_attention`` on them, which torch_npu's DTensor rules run on the local heads. The module defines the block for the test's CPU
reference; the simulator is installed only when run as a script. Every rank builds the full block from seed 0 and
writes ``OUT_DIR/rank<r>.json`` with the output, the loss, the full gradient of ``wq`` and the
placements of SDPA's query and output it saw, then the block's output with a per-head bool mask; the test checks them against the unsharded block on the CPU.
"""
import json
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

HEADS, DIM = 4, 16


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.wq, self.wk, self.wv = (nn.Linear(DIM, DIM, bias=False) for _ in range(3))
        self.wo = nn.Linear(DIM, DIM, bias=False)
        self.seen = []

    def forward(self, x, mask=None):
        b, s, _ = x.shape
        q, k, v = (w(x).view(b, s, -1, DIM // HEADS).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=mask is None, attn_mask=mask)
        if isinstance(q, DTensor):
            self.seen.append([str(q.placements), str(o.placements)])
        return self.wo(o.transpose(1, 2).reshape(b, s, -1))


def make_input():
    return torch.randn(2, 6, DIM, generator=torch.Generator().manual_seed(1))


def make_mask():
    """A per-head bool mask [B, N, S, S] (True = attend), every row keeping its diagonal."""
    keep = torch.rand(2, HEADS, 6, 6, generator=torch.Generator().manual_seed(2)) > 0.4
    return keep | torch.eye(6, dtype=torch.bool)


if __name__ == "__main__":
    import ascend_compat.simulator as simulator

    simulator.install_from_env()
    out_dir, local_output = sys.argv[1], sys.argv[2] == "local"
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.npu.set_device(local_rank)
    dist.init_process_group("hccl", timeout=timedelta(seconds=60))
    mesh = init_device_mesh("npu", (dist.get_world_size(),))
    torch.manual_seed(0)
    model = Attention().to("npu")
    plan = {name: ColwiseParallel(use_local_output=local_output) for name in ("wq", "wk", "wv")}
    plan["wo"] = RowwiseParallel()
    parallelize_module(model, mesh, plan)
    x = make_input().to("npu")
    out = model(x)
    loss = out.square().mean()
    loss.backward()
    grad = model.wq.weight.grad
    mask = make_mask()  # a plain bool mask beside the q/k/v of this rank (its heads, for local q/k/v)
    if local_output:
        mask = mask.chunk(dist.get_world_size(), dim=1)[dist.get_rank()]
    masked = model(x, mask.to("npu"))
    report = {
        "rank": dist.get_rank(),
        "out_device": str(out.device),
        "out": out.detach().cpu().tolist(),
        "loss": loss.item(),
        "wq_grad": grad.full_tensor().cpu().tolist() if isinstance(grad, DTensor) else grad.cpu().tolist(),
        "masked_out": masked.detach().cpu().tolist(),
        "sdpa_placements": model.seen,
    }
    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{report['rank']}.json"), "w") as fh:
        json.dump(report, fh)
