"""A small transformer block written the way many repositories write it: every fused op torch_npu
provides has its hand-written form here, at the line marked with its rule (FUSE rule-id)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, T, C, NH = 2, 8, 32, 4


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.norm_w = nn.Parameter(torch.ones(C))
        self.ln = nn.LayerNorm(C)
        self.up = nn.Linear(C, 4 * C)
        self.down = nn.Linear(2 * C, C)
        self.register_buffer("mask", torch.tril(torch.ones(T, T)).view(1, 1, T, T))
        pos = torch.arange(T).float()[:, None] * torch.arange(0, C // NH, 2).float()[None, :] / 100.0
        pos = torch.cat((pos, pos), dim=-1)
        self.register_buffer("cos", pos.cos()[None, None])
        self.register_buffer("sin", pos.sin()[None, None])

    def forward(self, x):
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.norm_w   # FUSE fused-rms-norm
        q, k, v = self.qkv(h).split(C, dim=2)
        q = q.view(B, T, NH, -1).transpose(1, 2)
        k = k.view(B, T, NH, -1).transpose(1, 2)
        v = v.view(B, T, NH, -1).transpose(1, 2)
        q = q * self.cos + rotate_half(q) * self.sin                     # FUSE fused-rotary
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # FUSE fused-attention
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)                  # FUSE fused-confusion-transpose
        x = x + self.proj(y)                                              # FUSE fused-add-layer-norm
        h = self.ln(x)
        gate, value = self.up(h).chunk(2, dim=-1)
        a = F.silu(gate) * value                                          # FUSE fused-swiglu
        g = 0.5 * a * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (a + 0.044715 * torch.pow(a, 3.0))))  # FUSE fused-gelu
        g1, g2 = self.up(h).chunk(2, dim=-1)
        b = F.gelu(g1) * g2                                               # FUSE fused-geglu
        return x + self.down(g) + self.down(b) + F.gelu(x)                # FUSE fast-gelu


model = Block().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
for step in range(5):
    loss = model(torch.randn(B, T, C, device="cuda")).pow(2).mean()
    loss.backward()
    opt.step()                                                            # FUSE fused-optimizer
    opt.zero_grad()
