"""RMSNorm, rotary, activation, softmax and transform fused-op references against float64 maths
written independently here from torch_npu's documented formulas."""
from __future__ import annotations

import math

import pytest
import torch

from ascend_compat.simulator.torch_npu import fused as F


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)


TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def close(actual, expected, dtype):
    torch.testing.assert_close(actual.double(), expected, atol=TOL[dtype], rtol=TOL[dtype])


# ----------------------------------------------------------------------------- norms
@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm(dtype):
    x = torch.randn(3, 4, 16).to(dtype)
    w = torch.randn(16).to(dtype)
    y, rstd = F.npu_rms_norm(x, w, epsilon=1e-5)
    xd = x.double()
    ref_rstd = 1 / torch.sqrt((xd * xd).mean(-1, keepdim=True) + 1e-5)
    assert y.dtype == dtype and rstd.dtype == torch.float32 and rstd.shape == (3, 4, 1)
    close(y, xd * ref_rstd * w.double(), dtype)
    torch.testing.assert_close(rstd.double(), ref_rstd, atol=1e-5, rtol=1e-5)


def test_rms_norm_multi_dim_gamma_and_grad():
    x = torch.randn(2, 3, 4, 5, requires_grad=True)
    w = torch.randn(4, 5, requires_grad=True)
    y, rstd = F.npu_rms_norm(x, w)
    assert rstd.shape == (2, 3, 1, 1)
    x64, w64 = x.detach().double().requires_grad_(True), w.detach().double().requires_grad_(True)
    ref = x64 / torch.sqrt((x64 ** 2).mean((-2, -1), keepdim=True) + 1e-6) * w64
    torch.testing.assert_close(y.double(), ref.detach(), atol=1e-5, rtol=1e-5)
    dy = torch.randn_like(y)
    y.backward(dy)
    ref.backward(dy.double())
    torch.testing.assert_close(x.grad.double(), x64.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(w.grad.double(), w64.grad, atol=1e-4, rtol=1e-4)


def test_gemma_rms_norm_scales_by_one_plus_gamma():
    x, w = torch.randn(4, 8), torch.randn(8)
    y, rstd = F.npu_gemma_rms_norm(x, w)
    xd = x.double()
    ref = xd / torch.sqrt((xd ** 2).mean(-1, keepdim=True) + 1e-6) * (1 + w.double())
    torch.testing.assert_close(y.double(), ref, atol=1e-5, rtol=1e-5)
    assert rstd.shape == (4, 1)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_add_rms_norm(dtype):
    x1, x2, w = torch.randn(2, 5, 8).to(dtype), torch.randn(2, 5, 8).to(dtype), torch.randn(8).to(dtype)
    y, rstd, s = F.npu_add_rms_norm(x1, x2, w, 1e-6)
    sd = x1.double() + x2.double()
    close(s, sd, dtype)
    close(y, sd / torch.sqrt((sd ** 2).mean(-1, keepdim=True) + 1e-6) * w.double(), dtype)
    assert rstd.shape == (2, 5, 1) and rstd.dtype == torch.float32


def test_norm_errors():
    with pytest.raises(RuntimeError, match="gamma dtype"):
        F.npu_rms_norm(torch.randn(2, 4, dtype=torch.float16), torch.randn(4))
    with pytest.raises(RuntimeError, match="trailing dims"):
        F.npu_rms_norm(torch.randn(2, 4), torch.randn(3))
    with pytest.raises(RuntimeError, match="float16"):
        F.npu_rms_norm(torch.randn(2, 4, dtype=torch.float64), torch.randn(4, dtype=torch.float64))


# ----------------------------------------------------------------------------- rotary
def ref_rope(x, cos, sin, mode):
    x, cos, sin = x.double(), cos.double(), sin.double()
    d = x.shape[-1]
    if mode == "half":
        cols = [-x[..., d // 2 + i] for i in range(d // 2)] + [x[..., i] for i in range(d // 2)]
    else:
        cols = []
        for i in range(0, d, 2):
            cols += [-x[..., i + 1], x[..., i]]
    return x * cos + torch.stack(cols, -1) * sin


@pytest.mark.parametrize("mode", ["half", "interleave"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rotary_mul(mode, dtype):
    b, n, s, d = 2, 3, 5, 8
    x = torch.randn(b, n, s, d).to(dtype)
    ang = torch.randn(1, 1, s, d)
    cos, sin = ang.cos().to(dtype), ang.sin().to(dtype)
    out = F.npu_rotary_mul(x, cos, sin, rotary_mode=mode)
    assert out.dtype == dtype and out.shape == x.shape
    close(out, ref_rope(x, cos, sin, mode), dtype)


def test_rotary_mul_rotate_matrix_and_grads():
    d = 4
    x = torch.randn(1, 2, 3, d, requires_grad=True)
    cos = torch.rand(1, 1, 3, d, requires_grad=True)
    sin = torch.rand(1, 1, 3, d, requires_grad=True)
    rot = torch.zeros(d, d)
    rot[2, 0], rot[3, 1], rot[0, 2], rot[1, 3] = -1, -1, 1, 1  # x @ rot == cat(-x2, x1)
    out = F.npu_rotary_mul(x, cos, sin, rotate=rot)
    torch.testing.assert_close(out, F.npu_rotary_mul(x, cos, sin))
    dy = torch.randn_like(out)
    out.backward(dy)
    refs = [t.detach().double().requires_grad_(True) for t in (x, cos, sin)]
    ref_rope(*refs, "half").backward(dy.double())
    for t, r in zip((x, cos, sin), refs):
        torch.testing.assert_close(t.grad.double(), r.grad, atol=1e-5, rtol=1e-5)


def test_apply_rotary_pos_emb_in_place():
    b, s, d = 2, 3, 64
    q, k = torch.randn(b, s, 4, d), torch.randn(b, s, 2, d)
    ang = torch.randn(b, s, 1, d)
    cos, sin = ang.cos(), ang.sin()
    q0, k0 = q.clone(), k.clone()
    q_out, k_out = F.npu_apply_rotary_pos_emb(q, k, cos, sin)
    assert q_out is q and k_out is k
    torch.testing.assert_close(q.double(), ref_rope(q0, cos, sin, "half"), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(k.double(), ref_rope(k0, cos, sin, "half"), atol=1e-5, rtol=1e-5)
    with pytest.raises(RuntimeError, match="64 or 128"):
        F.npu_apply_rotary_pos_emb(torch.randn(1, 2, 1, 32), torch.randn(1, 2, 1, 32), torch.randn(1, 2, 1, 32),
                                   torch.randn(1, 2, 1, 32))
    with pytest.raises(NotImplementedError, match="Atlas 350"):
        F.npu_apply_rotary_pos_emb(q, k, cos, sin, rotary_mode="interleave")


# ----------------------------------------------------------------------------- activations
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [-1, 0])
def test_swiglu_first_half_activated(dtype, dim):
    x = torch.randn(6, 8).to(dtype)
    out = F.npu_swiglu(x, dim=dim)
    a, b = x.double().chunk(2, dim=dim)
    close(out, a / (1 + torch.exp(-a)) * b, dtype)


def test_swiglu_odd_dim_rejected_and_grad():
    with pytest.raises(RuntimeError, match="divisible by 2"):
        F.npu_swiglu(torch.randn(3, 5))
    x = torch.randn(3, 4, dtype=torch.float32, requires_grad=True)
    F.npu_swiglu(x).sum().backward()
    a, b = x.detach().double().chunk(2, -1)
    sig = torch.sigmoid(a)
    torch.testing.assert_close(x.grad[:, :2].double(), b * sig * (1 + a * (1 - sig)), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(x.grad[:, 2:].double(), a * sig, atol=1e-5, rtol=1e-5)


def gelu_ref(x, tanh):
    if tanh:
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


@pytest.mark.parametrize("approximate", [0, 1])
@pytest.mark.parametrize("activate_left", [False, True])
def test_geglu(approximate, activate_left):
    x = torch.randn(4, 10)
    out, g = F.npu_geglu(x, dim=-1, approximate=approximate, activate_left=activate_left)
    a, b = x.double().chunk(2, -1)
    act = a if activate_left else b
    other = b if activate_left else a
    torch.testing.assert_close(g.double(), gelu_ref(act, approximate == 1), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.double(), gelu_ref(act, approximate == 1) * other, atol=1e-5, rtol=1e-5)


def test_gelu_family():
    x = torch.randn(4, 6)
    xd = x.double()
    torch.testing.assert_close(F.npu_gelu(x).double(), gelu_ref(xd, False), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(F.npu_gelu(x, approximate="tanh").double(), gelu_ref(xd, True), atol=1e-5, rtol=1e-5)
    a, b = xd.chunk(2, -1)
    torch.testing.assert_close(F.npu_gelu_mul(x).double(), gelu_ref(a, False) * b, atol=1e-5, rtol=1e-5)
    fast = xd / (1 + torch.exp(-1.702 * xd))
    torch.testing.assert_close(F.npu_fast_gelu(x).double(), fast, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(F.fast_gelu(x).double(), fast, atol=1e-5, rtol=1e-5)


# ----------------------------------------------------------------------------- softmax / transforms
@pytest.mark.parametrize("dtype", DTYPES)
def test_scaled_masked_softmax(dtype):
    x = torch.randn(2, 1, 32, 64).to(dtype)
    mask = torch.rand(2, 1, 32, 64) < 0.3
    y = F.npu_scaled_masked_softmax(x, mask, scale=0.5)
    logits = torch.where(mask, torch.tensor(-10000.0, dtype=torch.float64), x.double() * 0.5)
    e = torch.exp(logits - logits.max(-1, keepdim=True).values)
    close(y, e / e.sum(-1, keepdim=True), dtype)
    y_triu = F.npu_scaled_masked_softmax(x, mask, fixed_triu_mask=True)
    assert torch.all(y_triu[..., 0, 1:].float() < 1e-3)
    with pytest.raises(RuntimeError, match="divisible by 32"):
        F.npu_scaled_masked_softmax(torch.randn(1, 1, 8, 8), torch.zeros(1, 1, 8, 8, dtype=torch.bool))


def test_confusion_transpose_and_casts():
    x = torch.arange(24.0).reshape(2, 3, 4)
    a = F.npu_confusion_transpose(x, (0, 2, 1), (2, 12), True)
    assert torch.equal(a, x.permute(0, 2, 1).reshape(2, 12))
    b = F.npu_confusion_transpose(x, (1, 0), (6, 4), False)
    assert torch.equal(b, x.reshape(6, 4).permute(1, 0))
    assert F.npu_dtype_cast(x, torch.float16).dtype == torch.float16
    assert F.npu_dtype_cast(x, 15).dtype == torch.bfloat16
    with pytest.raises(RuntimeError, match="enum value:99"):
        F.npu_dtype_cast(x, 99)
    nz = F.npu_format_cast(x, 29)
    assert nz is not x and torch.equal(nz, x) and F.get_format(nz) == 29 and F.get_format(x) == 2
    assert F.npu_format_cast(nz, 29) is nz
    assert F.npu_format_cast_(x, nz) is x and F.get_format(x) == 29


# ----------------------------------------------------------------------------- optimiser steps
def test_apply_adam_w_matches_torch_adamw_over_steps():
    p0 = torch.randn(10)
    ref = p0.clone().requires_grad_(True)
    opt = torch.optim.AdamW([ref], lr=0.01, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)
    var, m, v = p0.clone(), torch.zeros(10), torch.zeros(10)
    for step in range(1, 4):
        g = torch.randn(10)
        ref.grad = g.clone()
        opt.step()
        # torch_npu documents beta*_power as beta^(t-1); the kernel multiplies by beta once more
        out = F.npu_apply_adam_w(0.9 ** (step - 1), 0.99 ** (step - 1), 0.01, 0.1, 0.9, 0.99, 1e-8, g, None,
                                 False, False, out=(var, m, v))
        assert out[0] is var and out[1] is m and out[2] is v
    # torch's AdamW decays with the old weights before the Adam step, same as the documented formula
    torch.testing.assert_close(var, ref.detach(), atol=1e-6, rtol=1e-5)


def test_apply_adam_tf_semantics_and_nesterov():
    var, m, v = torch.randn(6), torch.randn(6) * 0.1, torch.rand(6)
    g = torch.randn(6)
    b1, b2, lr, eps, b1p, b2p = 0.9, 0.999, 0.1, 1e-7, 0.9 ** 3, 0.999 ** 3
    m_ref = m.double() * b1 + (1 - b1) * g.double()
    v_ref = v.double() * b2 + (1 - b2) * g.double() ** 2
    lr_t = lr * math.sqrt(1 - b2p) / (1 - b1p)
    for nesterov in (False, True):
        upd = (b1 * m_ref + (1 - b1) * g.double()) if nesterov else m_ref
        expected = var.double() - lr_t * upd / (v_ref.sqrt() + eps)
        vv, mm, vv2 = var.clone(), m.clone(), v.clone()
        F.npu_apply_adam(b1p, b2p, lr, b1, b2, eps, g, False, nesterov, out=(vv, mm, vv2))
        torch.testing.assert_close(vv.double(), expected, atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(mm.double(), m_ref, atol=1e-6, rtol=1e-6)
    with pytest.raises(RuntimeError, match="out=\\(var, m, v\\)"):
        F.npu_apply_adam(b1p, b2p, lr, b1, b2, eps, g, False, False)
