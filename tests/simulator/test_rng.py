"""Per-device generators and seed determinism (torch.manual_seed reaches torch.npu.manual_seed_all)."""
from __future__ import annotations

import pytest
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


# --- the Philox state of torch_npu's NPUGeneratorImpl (issue 23, item 1) ----------------------------

def _seed_offset(state):
    return int(state[:8].view(torch.int64).item()), int(state[8:].view(torch.int64).item())


def test_state_is_sixteen_bytes_of_seed_and_offset():
    torch.manual_seed(11)
    state = torch.npu.get_rng_state()
    assert state.dtype == torch.uint8 and state.shape == (16,) and _seed_offset(state) == (11, 0)
    torch.randn(100, device="npu")  # op-plugin's calc_counter_offset: one round of 4
    assert _seed_offset(torch.npu.get_rng_state()) == (11, 4)
    torch.rand(1_000_000, device="npu")  # past 256 x 624 x 4 elements per round: 2 rounds
    assert _seed_offset(torch.npu.get_rng_state()) == (11, 12)
    torch.ones(3, device="npu").bernoulli_(0.5)  # philox_engine_inputs(10), rounded up to 12
    assert _seed_offset(torch.npu.get_rng_state()) == (11, 24)
    torch.randint(0, 5, (0,), device="npu")  # nothing drawn, nothing consumed
    assert _seed_offset(torch.npu.get_rng_state()) == (11, 24)


def test_numbers_are_a_function_of_seed_and_offset():
    """Restoring a state replays the numbers (checkpoint, fork_rng); another offset draws others; the
    first draw after seeding is the CPU's for that seed."""
    torch.manual_seed(3)
    first = torch.rand(5, device="npu").cpu()
    assert torch.equal(first, torch.rand(5, generator=torch.Generator().manual_seed(3)))
    state = torch.npu.get_rng_state()
    a = torch.rand(5, device="npu").cpu()
    b = torch.rand(5, device="npu").cpu()
    torch.npu.set_rng_state(state)
    assert torch.equal(torch.rand(5, device="npu").cpu(), a)
    assert not torch.equal(a, b) and not torch.equal(a, first)
    moved = state.clone()
    moved[8:] = torch.tensor([400], dtype=torch.int64).view(torch.uint8)
    torch.npu.set_rng_state(moved)
    c = torch.rand(5, device="npu").cpu()
    torch.npu.set_rng_state(moved)
    assert torch.equal(torch.rand(5, device="npu").cpu(), c) and not torch.equal(c, a)


def test_set_state_takes_sixteen_or_eight_bytes_and_checks_the_offset():
    g = torch.Generator("npu")
    g.set_state(torch.tensor([7, 0, 0, 0, 0, 0, 0, 0], dtype=torch.uint8))  # the seed alone
    assert (g.initial_seed(), g.get_offset()) == (7, 0)
    with pytest.raises(RuntimeError, match="RNG state is wrong size"):
        g.set_state(torch.zeros(5056, dtype=torch.uint8))  # a CPU generator's state
    with pytest.raises(RuntimeError, match="offset must be a multiple of 4"):
        g.set_offset(6)
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        g.set_state(torch.zeros(16))
    g.set_offset(8)
    assert _seed_offset(g.get_state()) == (7, 8)


def test_explicit_generators_advance_their_own_state():
    torch.manual_seed(1)
    default_before = torch.npu.get_rng_state()
    g = torch.Generator(device="npu")
    assert g.initial_seed() == 67280421310721 and g.get_offset() == 0  # createNPUGenerator
    g.manual_seed(5)
    x = torch.empty(6, device="npu").uniform_(generator=g)
    y = torch.randn(3, device="npu", generator=g)
    assert g.get_offset() == 8 and torch.equal(torch.npu.get_rng_state(), default_before)
    g.set_offset(0)
    assert torch.equal(torch.empty(6, device="npu").uniform_(generator=g).cpu(), x.cpu())
    assert torch.equal(torch.randn(3, device="npu", generator=g).cpu(), y.cpu())


def test_a_cpu_generator_is_refused_by_npu_ops():
    with pytest.raises(RuntimeError, match="Expected a 'npu' device type for generator but found 'cpu'"):
        torch.randn(3, device="npu", generator=torch.Generator())


def test_graphsafe_state_is_shared_and_clone_state_is_not():
    g = torch.Generator("npu").manual_seed(2)
    shared = g.graphsafe_get_state()
    torch.rand(4, device="npu", generator=shared)
    assert g.get_offset() == 4 and shared.device == torch.device("npu:0")
    copy = g.clone_state()
    torch.rand(4, device="npu", generator=copy)
    assert g.get_offset() == 4 and copy.get_offset() == 8
    other = torch.Generator("npu").manual_seed(9)
    g.graphsafe_set_state(other)
    torch.rand(4, device="npu", generator=g)
    assert (other.initial_seed(), other.get_offset()) == (9, 4)
    with pytest.raises(RuntimeError, match="Expected a NPU Generator"):
        g.graphsafe_set_state(torch.Generator())


def test_generators_pickle_with_their_state():
    import pickle

    g = torch.Generator("npu").manual_seed(12)
    torch.rand(2, device="npu", generator=g)
    back = pickle.loads(pickle.dumps(g))
    assert back.device == torch.device("npu:0") and torch.equal(back.get_state(), g.get_state())


def test_checkpointed_dropout_recomputes_the_same_mask():
    """torch.utils.checkpoint saves the npu RNG state before the forward and restores it for the
    recomputation: gradients equal the uncheckpointed ones only if the restored state replays dropout."""
    from torch.utils.checkpoint import checkpoint

    def block(x):
        return torch.nn.functional.dropout(x.sin(), 0.5).sum()

    x = torch.randn(64, device="npu", requires_grad=True)
    torch.manual_seed(4)
    block(x).backward()
    plain = x.grad.clone()
    x.grad = None
    torch.manual_seed(4)
    checkpoint(block, x, use_reentrant=False).backward()
    assert torch.equal(x.grad.cpu(), plain.cpu())
