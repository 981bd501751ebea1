"""The same model trained the way Ascend likes it: bfloat16 autocast, fixed shapes, fused AdamW,
fused cross-entropy, data on the device before the loop, the loss read once at the end."""
import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda"
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 64)
        self.proj = nn.Linear(64, 64)
        self.head = nn.Linear(64, 100)

    def forward(self, tokens):
        h = torch.relu(self.proj(self.emb(tokens)))
        return self.head(h)


model = Net().to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
data = torch.randint(0, 100, (4, 4, 16), device=device)
running = torch.zeros((), device=device)
for step in range(4):
    tokens = data[step]
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(tokens)
    loss = F.cross_entropy(logits.float().flatten(0, 1), tokens.flatten())
    loss.backward()
    opt.step()
    opt.zero_grad()
    running += loss.detach()
print(f"mean loss {(running / 4).item():.3f}")
