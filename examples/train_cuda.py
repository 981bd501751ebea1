"""A small CUDA training script, written the way CUDA code usually is.

Nothing in it knows about Ascend. Run it on the simulated NPU with:

    ascend-compat run --simulate examples/train_cuda.py

It trains a tiny character-level transformer on a built-in text with mixed precision, saves a
checkpoint, reloads it and checks the reloaded model gives the same loss.
"""
import argparse
import math
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

TEXT = (
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
    "must be in want of a wife. However little known the feelings or views of such a man may be "
    "on his first entering a neighbourhood, this truth is so well fixed in the minds of the "
    "surrounding families, that he is considered the rightful property of some one or other of "
    "their daughters. "
) * 4


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab, dim=64, heads=4, layers=2, block=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(1, block, dim))
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.tok.weight  # tied weights, as in GPT-2
        nn.init.normal_(self.tok.weight, std=0.02)

    def forward(self, idx):
        t = idx.shape[1]
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=idx.device), 1)
        x = self.tok(idx) + self.pos[:, :t]
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args()

    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.cuda.manual_seed_all(0)
    torch.manual_seed(0)
    print(f"device: {device}  ({torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU'})")

    chars = sorted(set(TEXT))
    data = torch.tensor([chars.index(c) for c in TEXT], dtype=torch.long)
    block = 32
    model = TinyGPT(len(chars), block=block).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scaler = torch.cuda.amp.GradScaler()

    def batch():
        ix = torch.randint(len(data) - block - 1, (args.batch,))
        x = torch.stack([data[i:i + block] for i in ix]).cuda(non_blocking=True)
        y = torch.stack([data[i + 1:i + block + 1] for i in ix]).to("cuda:0")
        return x, y

    first = last = None
    for step in range(args.steps):
        x, y = batch()
        with torch.cuda.amp.autocast(dtype=torch.bfloat16):
            logits = model(x)
            loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.view(-1))
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        first = loss.item() if first is None else first
        last = loss.item()
        if step % 20 == 0 or step == args.steps - 1:
            print(f"step {step:3d}  loss {last:.3f}  on {loss.device}")
    torch.cuda.synchronize()
    print(f"max memory allocated: {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ckpt.pt")
        torch.save(model.state_dict(), path)
        clone = TinyGPT(len(chars), block=block).cuda()
        clone.load_state_dict(torch.load(path, map_location="cuda"))
        model.eval(), clone.eval()
        with torch.no_grad():
            x, y = batch()
            a = F.cross_entropy(model(x).view(-1, len(chars)), y.view(-1))
            b = F.cross_entropy(clone(x).view(-1, len(chars)), y.view(-1))
        assert torch.allclose(a, b), (a, b)
    assert math.isfinite(last) and last < first, (first, last)
    print(f"trained: loss {first:.3f} -> {last:.3f}; checkpoint round trip OK")


if __name__ == "__main__":
    main()
