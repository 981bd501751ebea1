"""``.item()`` of a storage-less tensor in a plan (``plan._values.StandIns``): the value a healthy run would
see, so overflow checks find none, GradScaler steps and counts are counts. The stand-ins are fed as in the
recorder: an op observer inside ``FakeTensorMode`` (CPU FakeTensors here; no simulator needed)."""
from __future__ import annotations

import math

import pytest
import torch

from ascend_compat.observe.observer import OpCall, OpObserver
from ascend_compat.plan._values import StandIns, is_fake


class Values(OpObserver):
    """What the plan's recorder does with values, and nothing else."""

    def __init__(self, group: int = 1):
        super().__init__()
        self.values = StandIns(lambda args, kwargs: group)

    def on_op(self, call: OpCall):
        if call.func is torch.ops.aten._local_scalar_dense.default and is_fake(call.args[0]):
            return self.values.item(call.args[0])
        out = call.run()
        self.values.after(call.func, call.args, call.kwargs, out)
        return out


@pytest.fixture
def fake():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(allow_non_fake_inputs=True) as mode, Values() as values:
        yield mode, values


def test_checks_of_a_healthy_run_pass(fake):
    x = torch.empty(64, 32)
    assert is_fake(x)
    assert torch.isfinite(x).all().item() is True
    assert torch.isinf(x).any().item() is False and torch.isnan(x).any().item() is False
    assert (x != x).any().item() is False  # NaN check by self-inequality
    # DeepSpeed's has_inf_or_nan: float(x.float().sum()) is finite and equal to itself
    total = float(x.float().sum())
    assert total == 64 * 32 and math.isfinite(total)
    norm = torch.linalg.vector_norm(x, 2).item()
    assert norm == pytest.approx(math.sqrt(64 * 32)) and math.isfinite(norm)


def test_factories_fills_and_reductions_follow_their_values(fake):
    assert torch.zeros(5, 3).sum().item() == 0 and torch.ones(4, 5).sum().item() == 20
    t = torch.full((3, 4), 2.5)
    assert t.mean().item() == 2.5 and t.sum(0)[0].item() == 7.5
    t.zero_()
    assert t.amax().item() == 0 and bool(t.any()) is False
    flag = torch.zeros(1)
    flag.fill_(3)
    assert int(flag.item()) == 3 and (flag * 2 + 1).item() == 7
    copy = flag.clone()
    assert copy.item() == 3
    y = torch.empty(3)
    y.copy_(copy.expand(3))
    assert y.sum().item() == 9
    # a token count: the number of tokens
    mask = torch.ones(2, 8, dtype=torch.bool)
    assert mask.sum().item() == 16 and isinstance(mask.sum().item(), int)


def test_grad_scaler_steps_and_grows_as_without_overflow(fake):
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    for _ in range(2):
        loss = model(torch.randn(8, 16)).float().pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    # found_inf stayed 0: the optimizer stepped (momentum buffers exist) and the scale grew once
    assert all("momentum_buffer" in s for s in opt.state.values()) and len(opt.state) == 2
    assert scaler.get_scale() == 2048.0


def test_collectives_sum_over_the_group():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(), Values(group=8) as obs:
        flag, count = torch.zeros(1), torch.ones(1)
        summed, largest = count.clone(), flag.clone()
    # what a functional all-reduce over 8 ranks leaves (the ops themselves need a process group): with SUM a
    # 1 is 8, with MAX (DeepSpeed's overflow flag) a 0 stays 0
    all_reduce = torch.ops._c10d_functional.all_reduce.default
    obs.values.after(all_reduce, (count, "sum", "0"), {}, summed)
    obs.values.after(all_reduce, (flag, "max", "0"), {}, largest)
    assert obs.values.item(summed) == 8.0 and obs.values.item(largest) == 0.0
