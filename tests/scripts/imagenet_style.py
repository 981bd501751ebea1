"""ImageNet training loop in the style of pytorch/examples imagenet/main.py (written for the suite).

CUDA idioms: ``--gpu`` with ``torch.cuda.set_device(args.gpu)`` and ``model.cuda(args.gpu)``;
``torch.nn.DataParallel(model).cuda()`` when no GPU is chosen and not distributed; DDP with
``device_ids=[args.gpu]`` under torchrun; ``criterion.cuda(args.gpu)``,
``images.cuda(args.gpu, non_blocking=True)``; checkpoint saved and resumed with
``map_location='cuda:{}'.format(args.gpu)``. Tiny synthetic data, no torchvision datasets.
"""
import argparse
import os
import shutil
import tempfile

import torch
import torch.backends.cudnn as cudnn
import torch.distributed as dist
import torch.nn as nn
import torch.nn.parallel
import torch.optim
import torch.utils.data

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", default=None, type=int)
parser.add_argument("--epochs", default=2, type=int)
parser.add_argument("--resume", action="store_true")


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 5))


def accuracy(output, target):
    with torch.no_grad():
        pred = output.argmax(1)
        return pred.eq(target).float().mean().item() * 100


def main():
    args = parser.parse_args()
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        args.gpu = int(os.environ["LOCAL_RANK"])
        dist.init_process_group(backend="nccl", init_method="env://")
    if not torch.cuda.is_available():
        raise SystemExit("this script needs a GPU")
    torch.manual_seed(0)
    model = make_model()
    if distributed:
        torch.cuda.set_device(args.gpu)
        model.cuda(args.gpu)
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
    elif args.gpu is not None:
        torch.cuda.set_device(args.gpu)
        model = model.cuda(args.gpu)
    else:
        model = torch.nn.DataParallel(model).cuda()

    if torch.cuda.is_available():
        device = torch.device("cuda:{}".format(args.gpu)) if args.gpu is not None else torch.device("cuda")
    criterion = nn.CrossEntropyLoss().cuda(args.gpu)
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=1e-4)
    cudnn.benchmark = True

    g = torch.Generator().manual_seed(0)
    images_all = torch.randn(96, 3, 16, 16, generator=g)
    targets_all = torch.randint(0, 5, (96,), generator=g)
    images_all += targets_all.view(-1, 1, 1, 1).float()  # learnable
    dataset = torch.utils.data.TensorDataset(images_all, targets_all)
    sampler = torch.utils.data.distributed.DistributedSampler(dataset) if distributed else None
    loader = torch.utils.data.DataLoader(dataset, batch_size=16, shuffle=(sampler is None), sampler=sampler,
                                         pin_memory=True)
    ckpt_dir = tempfile.mkdtemp()
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        model.train()
        for images, target in loader:
            if args.gpu is not None and torch.cuda.is_available():
                images = images.cuda(args.gpu, non_blocking=True)
            elif torch.cuda.is_available():
                images = images.to(device, non_blocking=True)
            target = target.cuda(args.gpu, non_blocking=True)
            output = model(images)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        acc = accuracy(output, target)
        state = {"epoch": epoch + 1, "state_dict": model.state_dict(), "optimizer": optimizer.state_dict()}
        filename = os.path.join(ckpt_dir, "checkpoint.pth.tar")
        torch.save(state, filename)
        shutil.copyfile(filename, os.path.join(ckpt_dir, "model_best.pth.tar"))

    if args.resume:
        loc = "cuda:{}".format(args.gpu) if args.gpu is not None else None
        checkpoint = torch.load(os.path.join(ckpt_dir, "model_best.pth.tar"), map_location=loc)
        model.load_state_dict(checkpoint["state_dict"])
        optimizer.load_state_dict(checkpoint["optimizer"])
    kind = type(model).__name__
    rank = dist.get_rank() if distributed else 0
    if rank == 0:
        print(f"RESULT device={next(model.parameters()).device} wrapper={kind} loss={loss.item():.3f} acc={acc:.1f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
