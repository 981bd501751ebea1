"""Runs on the host only: the model never reaches the device."""
import torch

model = torch.nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
print("done")
