"""The same block written with the fused forms (SDPA, torch_npu's RMSNorm, rotary and SwiGLU, a fused
AdamW): no fused-op advice."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_npu

torch.manual_seed(0)
B, T, C, NH = 2, 8, 32, 4


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.norm_w = nn.Parameter(torch.ones(C))
        self.up = nn.Linear(C, 4 * C)
        self.down = nn.Linear(2 * C, C)
        pos = torch.arange(T).float()[:, None] * torch.arange(0, C // NH, 2).float()[None, :] / 100.0
        pos = torch.cat((pos, pos), dim=-1)
        self.register_buffer("cos", pos.cos()[None, None])
        self.register_buffer("sin", pos.sin()[None, None])

    def forward(self, x):
        h = torch_npu.npu_rms_norm(x, self.norm_w, epsilon=1e-6)[0]
        q, k, v = self.qkv(h).split(C, dim=2)
        q, k, v = (t.view(B, T, NH, -1).transpose(1, 2) for t in (q, k, v))
        q = torch_npu.npu_rotary_mul(q, self.cos, self.sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(torch_npu.npu_confusion_transpose(y, (0, 2, 1, 3), (B, T, C), True))
        return x + self.down(torch_npu.npu_swiglu(self.up(x), dim=-1))


model = Block().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
for step in range(5):
    loss = model(torch.randn(B, T, C, device="cuda")).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
