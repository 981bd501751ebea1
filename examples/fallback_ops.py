"""A device-agnostic script using two ops that torch_npu has no kernel for (torch.fmax, torch.mode).

    ascend-compat audit examples/fallback_ops.py              # which ops would fall back to the CPU
    ascend-compat run --simulate examples/fallback_ops.py     # the simulated NPU warns as torch_npu does
"""
import torch

torch.manual_seed(0)

device = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.randn(64, 8, device=device)
y = torch.randn(64, 8, device=device)
z = torch.fmax(x, y).relu()
labels = torch.randint(0, 4, (64,), device=device)
most_common = torch.mode(labels).values
print(f"max {z.max().item():.3f}, most common label {most_common.item()}")
