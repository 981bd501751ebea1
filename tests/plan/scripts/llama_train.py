"""A Llama-style decoder (RMSNorm, SwiGLU, causal SDPA) trained with AdamW, optionally under DDP or FSDP2.

CUDA code as users write it; the plan benchmarks and tests run it at 7B (``--dim 4096 --layers 32 --heads 32
--ffn 11008 --vocab 32000 --seq 2048``) and at toy sizes (the defaults). ``--dtype bf16`` is bf16 autocast (DDP,
single device) or FSDP2's bf16 mixed precision.
"""
import argparse, os, math
import torch, torch.nn as nn, torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--dim", type=int, default=256); p.add_argument("--layers", type=int, default=2)
p.add_argument("--heads", type=int, default=4); p.add_argument("--ffn", type=int, default=688)
p.add_argument("--vocab", type=int, default=1024); p.add_argument("--seq", type=int, default=128)
p.add_argument("--batch-size", type=int, default=2); p.add_argument("--steps", type=int, default=3)
p.add_argument("--parallel", choices=["none", "ddp", "fsdp"], default="none")
p.add_argument("--dtype", choices=["fp32", "bf16"], default="bf16")
p.add_argument("--init", choices=["device", "meta"], default="device",
               help="meta: build on the meta device, shard, then to_empty + reset_parameters (torchtitan's way)")
a = p.parse_args()

class RMSNorm(nn.Module):
    def __init__(s, d): super().__init__(); s.w = nn.Parameter(torch.ones(d))
    def reset_parameters(s): nn.init.ones_(s.w)
    def forward(s, x): return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * s.w

class Attn(nn.Module):
    def __init__(s):
        super().__init__(); s.qkv = nn.Linear(a.dim, 3 * a.dim, bias=False); s.o = nn.Linear(a.dim, a.dim, bias=False)
    def forward(s, x):
        B, T, C = x.shape
        q, k, v = s.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, a.heads, C // a.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return s.o(y.transpose(1, 2).reshape(B, T, C))

class MLP(nn.Module):
    def __init__(s):
        super().__init__(); s.w1 = nn.Linear(a.dim, a.ffn, bias=False); s.w3 = nn.Linear(a.dim, a.ffn, bias=False)
        s.w2 = nn.Linear(a.ffn, a.dim, bias=False)
    def forward(s, x): return s.w2(F.silu(s.w1(x)) * s.w3(x))

class Block(nn.Module):
    def __init__(s): super().__init__(); s.n1 = RMSNorm(a.dim); s.attn = Attn(); s.n2 = RMSNorm(a.dim); s.mlp = MLP()
    def forward(s, x): x = x + s.attn(s.n1(x)); return x + s.mlp(s.n2(x))

class Llama(nn.Module):
    def __init__(s):
        super().__init__(); s.emb = nn.Embedding(a.vocab, a.dim); s.layers = nn.ModuleList(Block() for _ in range(a.layers))
        s.norm = RMSNorm(a.dim); s.head = nn.Linear(a.dim, a.vocab, bias=False)
    def forward(s, idx):
        x = s.emb(idx)
        for l in s.layers: x = l(x)
        return s.head(s.norm(x))

world = int(os.environ.get("WORLD_SIZE", "1"))
if a.parallel != "none":
    import torch.distributed as dist
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
if a.init == "meta":
    with torch.device("meta"):
        model = Llama()
else:
    model = Llama().cuda()
if a.parallel == "ddp":
    model = nn.parallel.DistributedDataParallel(model)
elif a.parallel == "fsdp":
    from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if a.dtype == "bf16" else None
    for l in model.layers: fully_shard(l, mp_policy=mp) if mp else fully_shard(l)
    fully_shard(model, mp_policy=mp) if mp else fully_shard(model)
if a.init == "meta":
    model.to_empty(device="cuda")
    with torch.no_grad():  # initialise each rank's shard (DTensor's random ops need the device RNG's offset)
        for name, p in model.named_parameters():
            local = p.to_local() if hasattr(p, "to_local") else p
            local.fill_(1.0) if name.endswith(".w") else local.normal_(0.0, 0.02)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(a.steps):
    idx = torch.randint(0, a.vocab, (a.batch_size, a.seq), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.dtype == "bf16" and a.parallel != "fsdp"):
        logits = model(idx)
    loss = F.cross_entropy(logits.float().view(-1, a.vocab), idx.view(-1))
    loss.backward()
    opt.step(); opt.zero_grad(set_to_none=True)
print(f"max_allocated {torch.cuda.max_memory_allocated()} max_reserved {torch.cuda.max_memory_reserved()}")
