"""A small LightningModule trained with the accelerator named on the command line (prints RESULT JSON).

Usage: python pl_train.py ACCELERATOR[@PRECISION][,...] DEVICES [--apply] [--strategy S]
Several comma-separated accelerators train one after the other in this process (one RESULT each).
``--apply`` calls ascend_compat.ecosystem.integrations.lightning.apply() (needs ascend_compat imported: use
``ascend-compat run --simulate``); without it the script is plain Lightning code, as a user writes it.
"""
import argparse
import json
import os

import torch

ap = argparse.ArgumentParser()
ap.add_argument("accelerator")
ap.add_argument("devices")
ap.add_argument("--apply", action="store_true")
ap.add_argument("--strategy", default="auto")
args = ap.parse_args()
if args.apply:
    from ascend_compat.ecosystem.integrations import lightning as npu_lightning

    npu_lightning.apply()

import lightning as L  # noqa: E402


def emit(report):
    """One RESULT line in a single write (ranks share the pipe; PYTHONUNBUFFERED splits print())."""
    os.write(1, ("RESULT " + json.dumps(report) + "\n").encode())


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
        self.seen = {}

    def training_step(self, batch, _):
        x, y = batch
        out = self.net(x)
        self.seen = {"batch": str(x.device), "out_dtype": str(out.dtype), "param": str(self.net[0].weight.device)}
        loss = torch.nn.functional.mse_loss(out.float(), y)
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main(accelerator, precision):
    L.seed_everything(0, verbose=False)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 8, generator=g)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8)
    devices = int(args.devices) if args.devices.lstrip("-").isdigit() else args.devices
    trainer = L.Trainer(accelerator=accelerator, devices=devices, strategy=args.strategy, max_epochs=3,
                        precision=precision, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0)
    model = Regressor()
    with torch.no_grad():
        before = torch.nn.functional.mse_loss(model.net(x), x.sum(1, keepdim=True)).item()
    trainer.fit(model, data)
    in_sync = True
    if trainer.world_size > 1:  # Lightning's teardown moved the model back to the CPU
        weights = model.net[0].weight.detach().to(trainer.strategy.root_device)
        ref = weights.clone()
        torch.distributed.broadcast(ref, 0)
        in_sync = bool((ref == weights).all())
    with torch.no_grad():
        after = torch.nn.functional.mse_loss(model.net.cpu()(x), x.sum(1, keepdim=True)).item()
    emit({"asked": accelerator,
        "rank": trainer.global_rank, "world": trainer.world_size,
        "accelerator": type(trainer.accelerator).__name__, "strategy": type(trainer.strategy).__name__,
        "root_device": str(trainer.strategy.root_device), "seen": model.seen, "before": before, "after": after,
        "backend": torch.distributed.get_backend() if torch.distributed.is_initialized() else None,
        "in_sync": in_sync, "precision": type(trainer.precision_plugin).__name__,
        "autocast_device": getattr(trainer.precision_plugin, "device", None),
        "cuda_available": torch.cuda.is_available(), "local_rank": os.environ.get("LOCAL_RANK"),
    })


for spec in args.accelerator.split(","):
    name, _, prec = spec.partition("@")
    main(name, prec or "32-true")
