"""torchtitan-style memory estimation of ``tests/plan/scripts/llama_train.py --parallel fsdp --init meta`` with
PyTorch's own tools, for ``bench_plan.py``'s comparison: ``FakeTensorMode``, a fake process group
(``torch.testing._internal.distributed.fake_pg``) of the world size, and
``torch.distributed._tools.fsdp2_mem_tracker.FSDPMemTracker`` around two training steps, as torchtitan's
``scripts/estimate/estimation.py`` does.

Same model (the script's classes, copied), same sharding (``fully_shard`` per block and at the root, bf16
parameters, fp32 reduction), same optimizer (AdamW with its defaults), same step and loss, on the same device
as ``plan`` (the simulated NPU, so SDPA takes the same kernel and the optimizer the same foreach path): the only
difference left is the accounting, the tracker's (tensor bytes by category, no allocator) against the plan's.

Run: ``python benchmarks/_fsdp_mem_tracker.py DIM LAYERS HEADS FFN VOCAB SEQ BATCH WORLD``; prints ``PEAK
<bytes>`` (the tracker's peak over both iterations: torchtitan's "Tracker Max"), the tracker's categories there
as JSON (``BREAKDOWN {...}``), and ``FWBW_PEAK <bytes>``: the tracker's peak over the second iteration's forward
and backward (the root module's local peak; per-module statistics are reset after the first iteration, as
torchtitan does).
"""
import json
import os
import sys

dim, layers, heads, ffn, vocab, seq, batch, world = (int(x) for x in sys.argv[1:9])
os.environ.update({"ASCEND_COMPAT_SIMULATE": "1", "ASCEND_COMPAT_SIM_DEVICES": str(min(world, 8)),
                   "RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": str(world)})

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from ascend_compat import _activation  # noqa: E402

_activation.activate("simulator")
torch.npu._lazy_init()
from ascend_compat.plan._fake import register_fake_kernels  # noqa: E402  (torch_npu's fake kernels, as torch_npu has)

register_fake_kernels()
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard  # noqa: E402
from torch.testing._internal.distributed.fake_pg import FakeStore, _create_fake_pg  # noqa: E402

dist.Backend.register_backend("fakenpu", _create_fake_pg, extended_api=True, devices=["cpu", "npu"])
dist.init_process_group("fakenpu", store=FakeStore(), rank=0, world_size=world)
mesh = init_device_mesh("npu", (world,))  # before FakeTensorMode, as torchtitan does


class RMSNorm(nn.Module):
    def __init__(s, d): super().__init__(); s.w = nn.Parameter(torch.ones(d))
    def forward(s, x): return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * s.w


class Attn(nn.Module):
    def __init__(s):
        super().__init__(); s.qkv = nn.Linear(dim, 3 * dim, bias=False); s.o = nn.Linear(dim, dim, bias=False)

    def forward(s, x):
        B, T, C = x.shape
        q, k, v = s.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return s.o(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(s):
        super().__init__(); s.w1 = nn.Linear(dim, ffn, bias=False); s.w3 = nn.Linear(dim, ffn, bias=False)
        s.w2 = nn.Linear(ffn, dim, bias=False)
    def forward(s, x): return s.w2(F.silu(s.w1(x)) * s.w3(x))


class Block(nn.Module):
    def __init__(s): super().__init__(); s.n1 = RMSNorm(dim); s.attn = Attn(); s.n2 = RMSNorm(dim); s.mlp = MLP()
    def forward(s, x): x = x + s.attn(s.n1(x)); return x + s.mlp(s.n2(x))


class Llama(nn.Module):
    def __init__(s):
        super().__init__(); s.emb = nn.Embedding(vocab, dim); s.layers = nn.ModuleList(Block() for _ in range(layers))
        s.norm = RMSNorm(dim); s.head = nn.Linear(dim, vocab, bias=False)

    def forward(s, idx):
        x = s.emb(idx)
        for block in s.layers:
            x = block(x)
        return s.head(s.norm(x))


with FakeTensorMode(allow_non_fake_inputs=True):
    with torch.device("meta"):
        model = Llama()
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model.layers:
        fully_shard(block, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)
    model.to_empty(device="npu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tracker = FSDPMemTracker(model, opt)
    tracker.track_inputs((torch.randint(0, vocab, (batch, seq), device="npu"),))
    with tracker:
        for step in range(2):
            idx = torch.randint(0, vocab, (batch, seq), device="npu")
            logits = model(idx)
            F.cross_entropy(logits.float().view(-1, vocab), idx.view(-1)).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if step == 0:
                tracker.reset_mod_stats()  # torchtitan: the first iteration has no optimizer state yet
    peaks = tracker.get_tracker_snapshot("peak")
device = max(peaks, key=lambda d: peaks[d]["Total"])
root = tracker.memory_tracking[model]
print("PEAK", peaks[device]["Total"])
print("BREAKDOWN", json.dumps({str(getattr(k, "value", k)): v for k, v in peaks[device].items() if v}))
# the second iteration's forward and backward (the root module's local peak; the optimizer step runs outside it)
print("FWBW_PEAK", root.local_peak[device])
