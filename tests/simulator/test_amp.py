"""AMP on the simulated NPU (docs/simulator_pitfalls.md, pitfall 8): autocast with CUDA's cast lists,
GradScaler("npu"), torch.npu.amp.autocast, the weight cast cache."""
from __future__ import annotations

import pytest
import torch

from ascend_compat.simulator import _amp


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cast_policies(dtype):
    x = torch.randn(4, 8, device="npu")
    lin = torch.nn.Linear(8, 8).npu()
    with torch.autocast("npu", dtype=dtype):
        y = lin(x)
        assert y.dtype == dtype  # lower precision list
        assert torch.mm(x, x.t()).dtype == dtype
        assert torch.softmax(y, -1).dtype == torch.float32  # fp32 unless dtype given
        assert torch.softmax(y, -1, dtype=dtype).dtype == dtype
        assert torch.exp(y).dtype == torch.float32  # fp32 list
        assert torch.nn.functional.layer_norm(y, (8,)).dtype == torch.float32
        assert torch.addcmul(x, y, y).dtype == torch.float32  # promote to widest
        assert (y + 1).relu().dtype == dtype  # not listed: fallthrough, runs as is (docs/simulator_pitfalls.md, pitfall 8)
        assert torch.cat([y, y]).dtype == dtype
    assert torch.mm(x, x.t()).dtype == torch.float32  # outside autocast


def test_autocast_banned_op():
    p = torch.rand(4, device="npu")
    with torch.autocast("npu", dtype=torch.float16):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            torch.nn.functional.binary_cross_entropy(p, p)


def test_grad_scaler_trains():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).npu()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler("npu")
    x, y = torch.randn(32, 8, device="npu"), torch.randn(32, 1, device="npu")
    losses = []
    for _ in range(20):
        opt.zero_grad()
        with torch.autocast("npu", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(m(x), y)
        assert loss.dtype == torch.float32
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert scaler.get_scale() > 0


def test_weight_cast_cache_cleared_on_exit():
    lin = torch.nn.Linear(4, 4).npu()
    x = torch.randn(2, 4, device="npu")
    with torch.autocast("npu", dtype=torch.float16):
        lin(x)
        assert id(lin.weight) in _amp._cache  # leaf fp32 weight requiring grad: cached
        cached = _amp._cache[id(lin.weight)][1]
        lin(x)
        assert _amp._cache[id(lin.weight)][1] is cached  # reused, not re-cast
    assert _amp._cache == {}


def test_npu_amp_autocast_namespace():
    with torch.npu.amp.autocast():
        assert torch.mm(torch.ones(2, 2, device="npu"), torch.ones(2, 2, device="npu")).dtype == torch.float16


def test_get_amp_supported_dtype():
    assert torch.bfloat16 in torch.npu.get_amp_supported_dtype()
