"""The accuracy standard on host tensors: what it passes (results as good as the CUDA stand-in's, however
far from float32 they are) and what it flags (systematic errors a float32 tolerance let through)."""
from __future__ import annotations

import math

import pytest
import torch

from ascend_compat.accuracy.standard import judge, standard_of
from ascend_compat.simulator.numerics import hf32_round


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)


def test_each_op_gets_msprobes_standard():
    f32, i64 = torch.ones(1), torch.ones(1, dtype=torch.long)
    assert standard_of("aten::mm", f32) == "ulp" and standard_of("aten::addmm", f32) == "ulp"
    assert standard_of("aten::convolution_backward", f32) == "thousandth"
    assert standard_of("aten::mul_.Tensor", f32) == "absolute_threshold"
    assert standard_of("aten::relu", f32) == "binary_consistency"
    assert standard_of("aten::gelu", f32) == "benchmark" and standard_of("npu::npu_rms_norm", f32) == "benchmark"
    assert standard_of("aten::gelu", i64) == "binary_consistency"  # integer results must match exactly


def _layer_norm(x, dtype=torch.float32):
    w, b = torch.rand(x.shape[-1]) + 0.5, torch.randn(x.shape[-1])
    f = torch.nn.functional.layer_norm
    return f(x.to(dtype), x.shape[-1:], w.to(dtype), b.to(dtype)), f(x.double(), x.shape[-1:], w.double(), b.double())


def test_a_systematic_error_of_5e_5_departs_and_the_stand_ins_own_result_passes():
    out, golden = _layer_norm(torch.randn(64, 256))
    v = judge("aten::native_layer_norm", out * 1.00005, out, golden)
    assert v.departs and v.standard == "benchmark" and ("mean_rel_err" in v.criterion or "rmse" in v.criterion)
    assert not judge("aten::native_layer_norm", out, out, golden).departs


def test_half_precision_as_exact_as_half_allows_passes():
    """A float16 convolution backward summed in float32 (as a GPU does) against the host's float16:
    far beyond any float32 tolerance, no worse than the stand-in."""
    x, w, gy = torch.randn(4, 16, 12, 12), torch.randn(16, 16, 3, 3) * 0.1, torch.randn(4, 16, 12, 12)

    def grad_w(dtype):
        return torch.ops.aten.convolution_backward(gy.to(dtype), x.to(dtype), w.to(dtype), None, [1, 1], [1, 1],
                                                   [1, 1], False, [0, 0], 1, [False, True, False])[1]

    golden = grad_w(torch.float64)
    gpu_like = grad_w(torch.float32).half()
    host = grad_w(torch.float16)
    assert float(((gpu_like.double() - golden).abs() / golden.abs().clamp_min(1e-3)).max()) > 1e-4  # float32's rtol
    assert not judge("aten::convolution_backward", gpu_like, host, golden).departs


def _conv(x, w):
    return torch.nn.functional.conv2d(x, w, padding=1)


def test_hf32_convolution_departs_from_exact_float32_and_matches_tf32():
    x, w = torch.randn(2, 16, 8, 8), torch.randn(16, 16, 3, 3)
    golden, exact = _conv(x.double(), w.double()), _conv(x, w)
    hf32 = _conv(hf32_round(x), hf32_round(w))
    v = judge("aten::convolution", hf32, exact, golden)
    assert v.departs and v.standard == "thousandth"
    assert not judge("aten::convolution", hf32, hf32, golden).departs
    assert judge("aten::convolution", hf32 + 0.05, hf32, golden).departs  # a fault on top of HF32


def test_ulp_standard_for_matmul():
    a, b = torch.randn(64, 128), torch.randn(128, 32)
    golden = a.double() @ b.double()
    assert judge("aten::mm", hf32_round(a) @ hf32_round(b), a @ b, golden).departs
    half = a.half() @ b.half()
    assert not judge("aten::mm", half, half, golden).departs
    v = judge("aten::mm", half * 1.01, half, golden)
    assert v.departs and v.standard == "ulp" and "beyond 1 ULP" in v.criterion


def test_absolute_threshold_and_its_fallback_when_the_stand_in_fails_it_too():
    a = torch.randn(1000)
    assert judge("aten::add.Tensor", a + 1e-5, a, a.double()).departs
    assert not judge("aten::add.Tensor", a, a, a.double()).departs
    # x + alpha * y cancelling: the float32 stand-in misses the float64 golden by far more than rtol,
    # so an NPU result as far off is judged by the benchmark comparison (and passes)
    x, y = torch.ones(1000), -(1 - torch.rand(1000) * 1e-3) / 3
    golden = x.double() + 3 * y.double()
    host = x + 3 * y
    noisy = host * (1 + 1e-7)
    v = judge("aten::add.Tensor", noisy, host, golden)
    assert v.standard == "benchmark" and not v.departs
    assert judge("aten::add.Tensor", host * 1.01, host, golden).departs


def test_nan_where_the_host_is_finite_departs():
    a = torch.randn(100)
    bad = a.clone()
    bad[3] = math.nan
    v = judge("aten::gelu", bad, a, a.double())
    assert v.departs and v.nan_origin and v.excess == math.inf
    both = judge("aten::gelu", bad, bad, a.double())  # the host makes the same NaN: not the NPU's doing
    assert not both.departs


def test_binary_consistency_counts_differing_elements():
    idx = torch.arange(10)
    v = judge("aten::argmax", idx.flip(0), idx, idx.double())
    assert v.departs and v.criterion.startswith("10 of 10 elements")
    nan = torch.tensor([math.nan, 1.0])
    assert not judge("aten::relu", nan, nan.clone(), nan.double()).departs


def test_shape_mismatch_departs():
    assert judge("aten::gelu", torch.ones(3), torch.ones(4), torch.ones(4, dtype=torch.float64)).departs
