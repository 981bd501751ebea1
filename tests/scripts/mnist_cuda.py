"""MNIST classifier in the style of pytorch/examples mnist/main.py (written for the test suite).

CUDA idioms: ``torch.cuda.is_available()`` gating, ``torch.device("cuda")``, ``.to(device)``,
``model.cuda()``, ``pin_memory``, ``torch.cuda.manual_seed``. Synthetic 28x28 data, no downloads.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.fc1 = nn.Linear(16 * 12 * 12, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def synthetic_mnist(n, seed):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (n,), generator=g)
    images = torch.randn(n, 1, 28, 28, generator=g) * 0.3
    for i in range(n):  # a learnable pattern: a bright row per class
        images[i, 0, 2 + 2 * labels[i], :] += 2.0
    return TensorDataset(images, labels)


def train(model, device, loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
    print(f"Train Epoch: {epoch} loss {loss.item():.4f}")


def test(model, device, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.cuda(), target.cuda()
            pred = model(data).argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    acc = correct / len(loader.dataset)
    print(f"Test accuracy {acc:.3f}")
    return acc


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--no-cuda", action="store_true")
    args = parser.parse_args()
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    torch.manual_seed(1)
    if use_cuda:
        torch.cuda.manual_seed(1)
    device = torch.device("cuda" if use_cuda else "cpu")
    kwargs = {"num_workers": 0, "pin_memory": True} if use_cuda else {}
    train_loader = DataLoader(synthetic_mnist(512, 0), batch_size=64, shuffle=True, **kwargs)
    test_loader = DataLoader(synthetic_mnist(256, 1), batch_size=128, **kwargs)
    model = Net().to(device)
    if use_cuda:
        model = model.cuda()
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    for epoch in range(1, args.epochs + 1):
        train(model, device, train_loader, optimizer, epoch)
        acc = test(model, device, test_loader)
        scheduler.step()
    print(f"RESULT device={next(model.parameters()).device} is_cuda={next(model.parameters()).is_cuda} acc={acc:.3f}")


if __name__ == "__main__":
    main()
