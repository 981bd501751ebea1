"""Hogwild training in the style of pytorch/examples' mnist_hogwild, written for CUDA (for the test suite).

CUDA idioms: ``device = torch.device("cuda")``, ``mp.set_start_method("spawn", force=True)``, the model
moved to the GPU and ``model.share_memory()`` before ``mp.Process(target=train, args=(rank, model,
device, ...))``; every process updates the one shared set of parameters with its own SGD optimizer,
and the parent evaluates the trained model afterwards. Synthetic data (a linearly separable 4-class
problem) instead of MNIST. Ends with ``RESULT device=... child_devices=... changed=... acc=...``.
"""
import os

import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


def make_data(seed, n=512):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    centers = torch.randn(4, 16, generator=torch.Generator().manual_seed(99)) * 2
    y = (x @ centers.t()).argmax(1)
    return x, y


def train(rank, model, device, queue):
    torch.manual_seed(1 + rank)
    x, y = make_data(10 + rank)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    for epoch in range(3):
        for i in range(0, len(x), 32):
            optimizer.zero_grad()
            loss = F.nll_loss(model(x[i:i + 32].to(device)), y[i:i + 32].to(device))
            loss.backward()
            optimizer.step()
    queue.put((rank, str(next(model.parameters()).device), os.getpid()))


def test(model, device):
    x, y = make_data(1000)
    with torch.no_grad():
        pred = model(x.to(device)).argmax(1)
    return pred.eq(y.to(device)).float().mean().item()


if __name__ == "__main__":
    device = torch.device("cuda")
    torch.manual_seed(1)
    mp.set_start_method("spawn", force=True)
    model = Net().to(device)
    model.share_memory()  # gradients are allocated lazily, so they are not shared here
    before = [p.detach().cpu().clone() for p in model.parameters()]
    queue = mp.SimpleQueue()
    processes = []
    for rank in range(2):
        p = mp.Process(target=train, args=(rank, model, device, queue))
        p.start()
        processes.append(p)
    reports = sorted(queue.get() for _ in processes)
    for p in processes:
        p.join()
    changed = all(not torch.equal(b, p.detach().cpu()) for b, p in zip(before, model.parameters()))
    acc = test(model, device)
    print(f"RESULT device={next(model.parameters()).device} child_devices={','.join(r[1] for r in reports)} "
          f"exit={','.join(str(p.exitcode) for p in processes)} changed={changed} acc={acc:.3f}")
