import torch
x = torch.ones(4, device="cuda")
raise ValueError("boom in the user's script")
