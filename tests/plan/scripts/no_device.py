import torch
print(torch.randn(3).sum().item())
