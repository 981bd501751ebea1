"""``nn.SyncBatchNorm`` over the simulated hccl backend, rank r on ``npu:<LOCAL_RANK>``.

Launched by tests/simulator/test_distributed.py as
``torchrun --standalone --nproc-per-node=2 dist_sync_bn.py OUT_DIR``. Each rank normalises its
own batch (seeded by rank) with statistics synchronised across ranks, runs backward with its own
upstream gradient, and writes ``OUT_DIR/rank<r>.json`` with its output, input gradient, local
weight/bias gradients and running statistics; the test compares them with a CPU ``BatchNorm2d``
over the concatenated batches.
"""
import sys

from _rank import finish, start

rank, device = start()

import torch  # noqa: E402

out_dir = sys.argv[1]

torch.manual_seed(0)
bn = torch.nn.SyncBatchNorm(3, momentum=0.2)
bn.weight.data.uniform_(0.5, 1.5)
bn.bias.data.uniform_(-0.5, 0.5)
bn = bn.to(device)
data = torch.Generator().manual_seed(100 + rank)
x = (torch.randn(2 + rank, 3, 4, 4, generator=data) * 2 + 1).to(device).requires_grad_()
g = torch.randn(2 + rank, 3, 4, 4, generator=data).to(device)
y = bn(x)
y.backward(g)

report = {
    "rank": rank,
    "out_device": str(y.device),
    "y": y.detach().cpu().tolist(),
    "x_grad": x.grad.cpu().tolist(),
    "weight_grad": bn.weight.grad.cpu().tolist(),
    "bias_grad": bn.bias.grad.cpu().tolist(),
    "running_mean": bn.running_mean.cpu().tolist(),
    "running_var": bn.running_var.cpu().tolist(),
}
finish(out_dir, rank, report)
