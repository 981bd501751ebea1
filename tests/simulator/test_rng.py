"""Per-device generators and seed determinism (torch.manual_seed reaches torch.npu.manual_seed_all)."""
from __future__ import annotations

import torch

from ascend_compat.simulator import _rng


def test_manual_seed_determinism_including_dropout():
    def draw():
        torch.manual_seed(123)
        a = torch.randn(5, device="npu")
        b = torch.nn.functional.dropout(torch.ones(64, device="npu"), 0.5)
        c = torch.randint(0, 100, (4,), device="npu")
        d = torch.rand(3, device="npu").bernoulli()
        return [t.cpu() for t in (a, b, c, d)]

    for x, y in zip(draw(), draw()):
        assert torch.equal(x, y)


def test_device_generator_is_independent_of_cpu_generator():
    torch.manual_seed(7)
    a = torch.randn(4, device="npu")
    torch.manual_seed(7)
    torch.randn(100)  # consuming the CPU generator must not shift the npu stream
    b = torch.randn(4, device="npu")
    assert torch.equal(a.cpu(), b.cpu())


def test_rng_state_round_trip():
    state = _rng.get_rng_state(0)
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    a = torch.rand(3, device="npu")
    _rng.set_rng_state(state, 0)
    b = torch.rand(3, device="npu")
    assert torch.equal(a.cpu(), b.cpu())
    assert torch.equal(torch.npu.get_rng_state(), _rng.get_rng_state(0))


def test_seed_functions():
    _rng.manual_seed(99, 0)
    assert _rng.initial_seed(0) == 99
    s = _rng.seed(0)
    assert _rng.initial_seed(0) == s
    assert _rng.generator(0) is _rng.default_generators()[0]
    assert _rng.generator(0).device == torch.device("npu:0")


def test_normal_draws_the_cpu_kernel_stream_of_the_device_generator():
    """randn = empty + normal_; normal_'s direct kernel runs the CPU kernel on the device generator,
    so a seed gives the CPU's stream for that seed, and an explicit generator is honoured."""
    assert torch._C._dispatch_has_kernel_for_dispatch_key("aten::normal_", "PrivateUse1")  # as torch_npu
    torch.manual_seed(123)
    a = torch.randn(2, 5, device="npu")
    cpu = torch.Generator().manual_seed(123)
    assert torch.equal(a.cpu(), torch.randn(2, 5, generator=cpu))
    g = torch.Generator(device="npu").manual_seed(5)
    x = torch.empty(6, device="npu").normal_(2.0, 0.5, generator=g)
    assert torch.equal(x.cpu(), torch.empty(6).normal_(2.0, 0.5, generator=torch.Generator().manual_seed(5)))
    base = torch.zeros(4, 4, device="npu")
    base.t()[1:].normal_()  # a strided view is written in place, through to its base
    host = base.cpu()
    assert torch.equal(host[:, 0], torch.zeros(4)) and bool((host[:, 1:] != 0).all())
