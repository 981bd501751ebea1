"""Character-level GPT in the style of nanoGPT's train.py (written for the test suite).

CUDA idioms: DDP over ``backend="nccl"`` under torchrun, ``torch.cuda.set_device``,
``device = f"cuda:{local_rank}"``, ``"cuda" in device`` device-type selection,
``torch.cuda.amp.autocast`` + ``torch.cuda.amp.GradScaler``, ``torch.backends.cuda.matmul.allow_tf32``,
``torch.cuda.is_bf16_supported``, ``dist.get_backend() == "nccl"``. Runs single-process without torchrun.
"""
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

TEXT = "to be or not to be that is the question whether tis nobler in the mind to suffer " * 20
block_size, n_embd, n_head, n_layer, batch_size, max_iters = 32, 32, 4, 2, 8, 30


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(n_embd, dim=2)
        q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(n_embd), CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(Block() for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx, targets=None):
        device = idx.device
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def main():
    ddp = int(os.environ.get("RANK", -1)) != -1
    if ddp:
        dist.init_process_group(backend="nccl")
        ddp_rank, ddp_local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
        world = int(os.environ["WORLD_SIZE"])
        device = f"cuda:{ddp_local_rank}"
        torch.cuda.set_device(device)
        master = ddp_rank == 0
        assert dist.get_backend() == "nccl", dist.get_backend()
    else:
        ddp_rank, world, master, device = 0, 1, True, "cuda"
    torch.manual_seed(1337 + ddp_rank)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device_type = "cuda" if "cuda" in device else "cpu"
    dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"
    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    ctx = torch.cuda.amp.autocast(dtype=ptdtype) if device_type == "cuda" else torch.no_grad()

    chars = sorted(set(TEXT))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)

    def get_batch():
        ix = torch.randint(len(data) - block_size, (batch_size,))
        x = torch.stack([data[i:i + block_size] for i in ix])
        y = torch.stack([data[i + 1:i + 1 + block_size] for i in ix])
        if device_type == "cuda":
            return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
        return x.to(device), y.to(device)

    model = GPT(len(chars)).to(device)
    scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, fused=False)
    if ddp:
        model = DDP(model, device_ids=[ddp_local_rank])
    first = None
    for it in range(max_iters):
        lr = 3e-3 * 0.5 * (1 + math.cos(math.pi * it / max_iters))
        for group in optimizer.param_groups:
            group["lr"] = lr
        X, Y = get_batch()
        with ctx:
            logits, loss = model(X, Y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        first = loss.item() if first is None else first
    raw = model.module if ddp else model
    param = next(raw.parameters())
    if ddp:  # replicas must agree after DDP's gradient averaging
        check = param.detach().clone()
        dist.all_reduce(check)
        assert torch.allclose(check / world, param, atol=1e-5)
    if master:
        print(f"RESULT device={param.device} logits_dtype={logits.dtype} first={first:.3f} last={loss.item():.3f} "
              f"world={world} backend={dist.get_backend() if ddp else 'none'}")
    if ddp:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
