"""A CUDA-style accelerate training script (no NPU names in it); prints one RESULT JSON per rank.

Run it under the shim (``python -m ascend_compat run --simulate accel_train.py``),
through ``accelerate launch`` or ``torchrun``. It checks nothing itself: the test reads the report.
"""
import json
import os

import torch
import torch.distributed as dist
from accelerate import Accelerator
from accelerate.utils import set_seed


def emit(report):
    """One RESULT line in a single write (ranks share the pipe; PYTHONUNBUFFERED splits print())."""
    os.write(1, ("RESULT " + json.dumps(report) + "\n").encode())


def main():
    accelerator = Accelerator()
    set_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 8, generator=g)
    y = x.sum(1, keepdim=True)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)
    model, opt, data = accelerator.prepare(model, opt, data)
    losses = []
    for _ in range(3):
        for xb, yb in data:
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            accelerator.backward(loss)
            opt.step()
            opt.zero_grad()
        losses.append(accelerator.gather(loss.detach()).mean().item())
    weights = accelerator.unwrap_model(model)[0].weight.detach().cpu()
    same = torch.ones(1, device=accelerator.device)
    if dist.is_initialized():
        w = weights.to(accelerator.device)
        ref = w.clone()
        dist.broadcast(ref, 0)
        same = (w == ref).all().float().reshape(1)
    emit({
        "rank": accelerator.process_index, "world": accelerator.num_processes,
        "device": str(accelerator.device), "distributed_type": str(accelerator.distributed_type),
        "backend": accelerator.state.backend, "dist_backend": dist.get_backend() if dist.is_initialized() else None,
        "param_device": str(next(model.parameters()).device), "losses": losses,
        "weights_in_sync": bool(same.item()), "cuda_available": torch.cuda.is_available(),
        "local_rank_env": os.environ.get("LOCAL_RANK"),
    })
    accelerator.end_training()


if __name__ == "__main__":
    main()
