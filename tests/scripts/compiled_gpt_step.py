"""A tiny GPT trained with ``torch.compile``, in the style of nanoGPT's train.py (written for the test suite).

CUDA idioms: ``device = "cuda"``, ``device_type = "cuda" if "cuda" in device else "cpu"``,
``model = torch.compile(model)`` (nanoGPT's default ``compile = True``), position ids made inside the
compiled forward with ``torch.arange(0, t, dtype=torch.long, device=device)``, a causal mask made there
with ``torch.ones(..., device=idx.device)``, ``torch.amp.autocast(device_type=..., dtype=torch.bfloat16)``,
AdamW with ``fused=True`` on the GPU. Ends with ``RESULT device=... first=... last=... graphs=...``.
"""
import inspect

import torch
import torch.nn as nn
from torch.nn import functional as F

block_size, vocab, n_embd, n_head, batch = 16, 32, 32, 4, 8
device = "cuda"
device_type = "cuda" if "cuda" in device else "cpu"


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.qkv, self.proj = nn.Linear(n_embd, 3 * n_embd), nn.Linear(n_embd, n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(self.ln1(x)).split(n_embd, dim=2)
        q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (C // n_head) ** 0.5)
        causal = torch.tril(torch.ones(T, T, device=x.device, dtype=torch.bool))  # a factory in the graph
        att = F.softmax(att.masked_fill(~causal, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, n_embd), nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(n_embd, vocab, bias=False)

    def forward(self, idx, targets):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)  # nanoGPT's line
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(x)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


torch.manual_seed(1337)
model = GPT().to(device)
fused = "fused" in inspect.signature(torch.optim.AdamW).parameters and device_type == "cuda"
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, fused=fused)
model = torch.compile(model)
data = torch.randint(0, vocab, (64, block_size + 1), generator=torch.Generator().manual_seed(0))
losses = []
for step in range(12):
    chunk = data[(step * batch) % 64:(step * batch) % 64 + batch]
    x, y = chunk[:, :-1].pin_memory().to(device, non_blocking=True), chunk[:, 1:].to(device)
    with torch.amp.autocast(device_type=device_type, dtype=torch.bfloat16):
        loss = model(x, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
print(f"RESULT device={next(model.parameters()).device} first={losses[0]:.4f} last={losses[-1]:.4f} "
      f"graphs={graphs}")
