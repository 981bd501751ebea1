"""HF32 on the simulated NPU: on by default for convolutions, as torch_npu's switches say."""
from __future__ import annotations

import contextlib

import pytest
import torch
import torch.nn.functional as F

from _subproc import check, run_python
from ascend_compat.simulator import numerics


def _hf32_reference(x: torch.Tensor) -> torch.Tensor:
    """Round ``x`` to the nearest TF32-format value (11 significant bits; subnormals spaced 2**-136),
    ties to even, computed in float64 from the value rather than its bits."""
    x = x.double()
    _, exponent = torch.frexp(x)  # x = m * 2**exponent, m in [0.5, 1)
    quantum = torch.pow(2.0, torch.clamp(exponent - 11, min=-136).double())
    return (torch.round(x / quantum) * quantum).float()


@contextlib.contextmanager
def switches(conv: bool, matmul: bool):
    saved = torch.npu.conv.allow_hf32, torch.npu.matmul.allow_hf32
    torch.npu.conv.allow_hf32, torch.npu.matmul.allow_hf32 = conv, matmul
    try:
        yield
    finally:
        torch.npu.conv.allow_hf32, torch.npu.matmul.allow_hf32 = saved


def test_rounding_is_nearest_even_to_a_10_bit_mantissa():
    torch.manual_seed(0)
    x = torch.cat([torch.randn(10000) * 10.0 ** torch.randint(-30, 30, (10000,)).float(),
                   torch.tensor([1 + 2 ** -11, 1 + 3 * 2 ** -11, -(1 + 2 ** -11), 2 ** -137, 3 * 2 ** -137, 0.0, -0.0])])
    got = numerics.hf32_round(x)
    want = _hf32_reference(x)
    assert torch.equal(got, want)
    assert got[-7].item() == 1.0 and got[-6].item() == 1 + 2 ** -9  # ties to even, both ways
    assert got[-4].item() == 0.0 and got[-3].item() == 2 ** -135  # subnormal ties
    specials = torch.tensor([float("nan"), float("inf"), -float("inf")])
    out = numerics.hf32_round(specials)
    assert out[0].isnan() and out[1] == float("inf") and out[2] == -float("inf")


def test_convolution_is_hf32_by_default_and_matmul_is_exact():
    assert torch.npu.conv.allow_hf32 is True and torch.npu.matmul.allow_hf32 is False
    torch.manual_seed(1)
    x, w = torch.randn(2, 3, 9, 9), torch.randn(4, 3, 3, 3)
    got = F.conv2d(x.npu(), w.npu()).cpu()
    assert torch.equal(got, F.conv2d(_hf32_reference(x), _hf32_reference(w)))
    assert not torch.equal(got, F.conv2d(x, w))
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    assert torch.equal((a.npu() @ b.npu()).cpu(), a @ b)


def test_switches_turn_hf32_on_and_off_for_their_ops():
    torch.manual_seed(2)
    x, w = torch.randn(1, 2, 6, 6), torch.randn(2, 2, 3, 3)
    a, b = torch.randn(3, 5, 7), torch.randn(3, 7, 2)
    with switches(conv=False, matmul=True):
        assert torch.equal(F.conv2d(x.npu(), w.npu()).cpu(), F.conv2d(x, w))
        assert torch.equal(torch.bmm(a.npu(), b.npu()).cpu(), torch.bmm(_hf32_reference(a), _hf32_reference(b)))
    assert torch.equal(torch.bmm(a.npu(), b.npu()).cpu(), torch.bmm(a, b))


def test_backward_of_a_convolution_rounds_and_keeps_other_dtypes_exact():
    torch.manual_seed(3)
    x = torch.randn(2, 3, 7, 7, device="npu", requires_grad=True)
    w = torch.randn(5, 3, 3, 3, device="npu", requires_grad=True)
    F.conv2d(x, w).square().sum().backward()
    xc, wc = x.detach().cpu().requires_grad_(), w.detach().cpu().requires_grad_()
    F.conv2d(xc, wc).square().sum().backward()
    error = (x.grad.cpu() - xc.grad).abs().max() / xc.grad.abs().max()
    assert 0 < error < 1e-2
    xh, wh = x.detach().half(), w.detach().half()
    assert torch.equal(F.conv2d(xh, wh).cpu(), F.conv2d(xh.cpu().float(), wh.cpu().float()).half())


def test_rounding_allocates_nothing_that_outlives_the_op():
    x, w = torch.randn(1, 2, 8, 8, device="npu"), torch.randn(2, 2, 3, 3, device="npu")
    before = torch.npu.memory_allocated()
    y = F.conv2d(x, w)
    assert torch.npu.memory_allocated() > before
    del y
    assert torch.npu.memory_allocated() == before


def test_a_cpu_input_still_gets_the_device_error():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        F.conv2d(torch.randn(1, 2, 8, 8, device="npu"), torch.randn(2, 2, 3, 3))


def test_environment_exact_and_invalid_value():
    code = """
        import warnings, torch, torch.nn.functional as F
        import ascend_compat.simulator as sim
        sim.install_from_env()
        x, w = torch.randn(1, 2, 6, 6), torch.randn(2, 2, 3, 3)
        print("RESULT exact=%s" % torch.equal(F.conv2d(x.npu(), w.npu()).cpu(), F.conv2d(x, w)))
    """
    out = check(run_python(code, env={"ASCEND_COMPAT_SIM_NUMERICS": "exact"}))
    assert "exact=True" in out
    proc = run_python(code, env={"ASCEND_COMPAT_SIM_NUMERICS": "fast"})
    assert "exact=False" in check(proc)
    assert "ASCEND_COMPAT_SIM_NUMERICS" in proc.stderr and "npu (HF32 switches honoured)" in proc.stderr


def test_a_bias_is_added_in_float32_not_rounded():
    torch.manual_seed(4)
    x, w, bias = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3), torch.randn(3) + 1 / 3
    got = F.conv2d(x.npu(), w.npu(), bias.npu()).cpu()
    assert torch.equal(got, F.conv2d(_hf32_reference(x), _hf32_reference(w), bias))
    m1, m2, b = torch.randn(4, 6), torch.randn(6, 5), torch.randn(5) + 1 / 3
    with switches(conv=True, matmul=True):
        got = torch.addmm(b.npu(), m1.npu(), m2.npu()).cpu()
    assert torch.equal(got, torch.addmm(b, _hf32_reference(m1), _hf32_reference(m2)))


def test_the_one_pass_rounding_equals_the_torch_rounding():
    from ascend_compat.simulator import _cext

    if _cext.loaded_module() is None:
        pytest.skip(f"the simulator's C++ part is not loaded here: {_cext.hooks_unavailable_reason()}")
    torch.manual_seed(5)
    x = torch.randn(4, 8, 6, 6) * 10.0 ** torch.randint(-40, 38, (4, 8, 6, 6)).float()
    x.view(-1)[:5] = torch.tensor([float("nan"), float("inf"), -float("inf"), 3.4e38, -0.0])
    for t in (x, x.to(memory_format=torch.channels_last), x[:, :, ::2]):
        fast, slow = numerics._round_host(t), numerics._round_host_torch(t)
        assert torch.equal(fast.view(torch.int32), slow.view(torch.int32))  # bit for bit, NaN included
        assert fast.isnan().sum() == 1 and fast.isinf().sum() == 2
        if t.is_contiguous() or t.is_contiguous(memory_format=torch.channels_last):
            assert fast.stride() == t.stride()


def test_a_lazily_negated_operand_keeps_its_sign():
    torch.manual_seed(6)
    x, w = torch.randn(1, 2, 5, 5), torch.randn(2, 2, 3, 3)
    got = F.conv2d(torch._neg_view(x.npu()), w.npu()).cpu()
    assert torch.equal(got, F.conv2d(-_hf32_reference(x), _hf32_reference(w)))
