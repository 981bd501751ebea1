"""A training loop with a hand-written SGD update, as pytorch/examples' word_language_model and many
tutorials write it: one in-place op per parameter per step (no optimizer object, so no step boundary)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256)).cuda()
lr = 0.1
for step in range(5):
    x = torch.randn(32, 64, device="cuda")
    loss = model(x).pow(2).mean()                                       # PLANT fp32-matmul
    model.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)             # the gradients' own update: not flagged
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-lr)                                  # PLANT manual-update
