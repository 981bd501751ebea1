"""A rank that asks for CUDA and then trains on the CPU (the silent CPU run the exit notice is for)."""
import torch

use_gpu = torch.cuda.is_available()
m = torch.nn.Linear(4, 4)
m(torch.randn(2, 4)).sum().backward()
print("CPU RANK done", flush=True)
