"""A small CUDA-style training loop with every planted problem (see test_profile.py for the lines)."""
import random

import torch
import torch.nn as nn

device = "cuda"
torch.manual_seed(0)
random.seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 64)
        self.proj = nn.Linear(64, 64)
        self.head = nn.Linear(64, 100)

    def forward(self, tokens):
        h = torch.relu(self.proj(self.emb(tokens)))
        return self.head(h)                                             # PLANT fp32-matmul


model = Net().to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
for step in range(4):
    seq = random.choice([8, 12, 16])
    tokens = torch.randint(0, 100, (4, seq), device=device)             # PLANT shape-churn
    weights = torch.tensor([1.0, 0.5, 0.25, 0.125]).to(device)          # PLANT tensor-from-python
    logits = model(tokens)                                              # fp32: no autocast
    probs = torch.softmax(logits, dim=-1)
    logp = torch.log(probs)                                             # PLANT unfused-loss
    loss = -(logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1) * weights[:, None]).mean()
    loss.backward()
    opt.step()                                                          # PLANT unfused-optimizer
    opt.zero_grad()
    mode = torch.mode(tokens.flatten().float()).values                  # PLANT cpu-fallback
    print(f"step {step} loss {loss.item():.3f}")                        # PLANT device-sync
