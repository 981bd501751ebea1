"""flash-attn drop-in vs an independent float64 reference attention, on the simulated NPU.

The reference below is written from flash-attn's documented semantics (bottom-right causal,
window ``[i + Sk - Sq - left, i + Sk - Sq + right]``, ALiBi ``-slope·|i + Sk - Sq - j|`` added to
the scaled scores, zero output and +inf lse on empty rows), not from our implementation.
"""
from __future__ import annotations

import math

import pytest
import torch

from ascend_compat import simulator

if not simulator.is_installed():
    simulator.install()

from ascend_compat.ecosystem.dropins import flash_attn as fa  # noqa: E402
from ascend_compat.ecosystem.dropins.flash_attn import bert_padding, rotary  # noqa: E402

DTYPES = [torch.float16, torch.bfloat16, torch.float32]
ATOL = {torch.float16: 3e-3, torch.bfloat16: 2.5e-2, torch.float32: 2e-5}
GRAD_ATOL = {torch.float16: 1e-2, torch.bfloat16: 6e-2, torch.float32: 1e-4}


def reference(q, k, v, causal=False, window=(-1, -1), scale=None, alibi=None):
    """float64 attention on CPU; q (B, Sq, H, D), k/v (B, Sk, Hk, D). Returns (out, lse (B, H, Sq))."""
    q, k, v = (t.detach().cpu().double().requires_grad_(t.requires_grad) for t in (q, k, v))
    b, sq, h, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    scale = 1 / math.sqrt(d) if scale is None else scale
    kk = k.repeat_interleave(h // hk, dim=2)
    vv = v.repeat_interleave(h // hk, dim=2)
    scores = torch.einsum("bqhd,bkhd->bhqk", q, kk) * scale
    i = torch.arange(sq).view(sq, 1)
    j = torch.arange(sk).view(1, sk)
    diag = i + sk - sq
    keep = torch.ones(sq, sk, dtype=torch.bool)
    left, right = window
    if causal:
        keep &= j <= diag
    if left >= 0:
        keep &= j >= diag - left
    if right >= 0:
        keep &= j <= diag + right
    if alibi is not None:
        slopes = alibi.cpu().double().view(-1, h, 1, 1)
        scores = scores - slopes * (diag - j).abs().double()
    scores = scores.masked_fill(~keep, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    probs = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    out = torch.einsum("bhqk,bkhd->bqhd", probs, vv)
    lse = torch.where(torch.isinf(lse), torch.full_like(lse, float("inf")), lse)
    return out, lse, (q, k, v)


def make(b, sq, sk, h, hk, d, dtype, grad=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, s, n, d, generator=g) for s, n in ((sq, h), (sk, hk), (sk, hk)))
    return [t.to(dtype).to("npu").requires_grad_(grad) for t in (q, k, v)]


def assert_close(actual, expected, atol, what=""):
    diff = (actual.detach().cpu().double() - expected.detach().double()).abs().max().item()
    assert diff <= atol, f"{what}: max abs diff {diff:.3g} > {atol}"


CASES = [
    # name, (b, sq, sk, h, hk, d), kwargs
    ("full", (2, 7, 7, 4, 4, 16), {}),
    ("causal", (2, 9, 9, 4, 4, 16), {"causal": True}),
    ("causal_sq_lt_sk", (2, 3, 8, 2, 2, 16), {"causal": True}),
    ("causal_sq_gt_sk", (1, 8, 3, 2, 2, 16), {"causal": True}),
    ("window", (2, 10, 10, 2, 2, 8), {"window_size": (3, 2)}),
    ("window_left_only", (1, 6, 9, 2, 2, 8), {"window_size": (2, -1)}),
    ("causal_window", (2, 10, 12, 2, 2, 8), {"causal": True, "window_size": (4, 7)}),
    ("gqa", (2, 6, 6, 6, 2, 8), {"causal": True}),
    ("mqa", (1, 5, 7, 4, 1, 8), {}),
    ("scale", (1, 5, 5, 2, 2, 8), {"softmax_scale": 0.05}),
    ("decode_one_token", (2, 1, 9, 4, 2, 8), {"causal": True}),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name,shape,kwargs", CASES, ids=[c[0] for c in CASES])
def test_flash_attn_func_matches_reference(name, shape, kwargs, dtype):
    q, k, v = make(*shape, dtype, grad=True)
    out, lse, probs = fa.flash_attn_func(q, k, v, return_attn_probs=True, **kwargs)
    assert out.dtype == dtype and out.device.type == "npu" and out.shape == q.shape
    assert lse.dtype == torch.float32 and lse.shape == (shape[0], shape[3], shape[1])
    assert probs.numel() == 0
    ref, ref_lse, leaves = reference(q, k, v, kwargs.get("causal", False), kwargs.get("window_size", (-1, -1)),
                                     kwargs.get("softmax_scale"))
    assert_close(out, ref, ATOL[dtype], f"{name} out")
    finite = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse.cpu()), finite), "lse must be +inf exactly on rows with no keys"
    assert_close(lse.cpu()[finite], ref_lse[finite], 1e-2 if dtype != torch.float32 else 1e-5, f"{name} lse")
    # gradients vs the reference
    dout = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
    out.backward(dout.to(dtype).to("npu"))
    ref.backward(dout.double())
    for t, r, n in zip((q, k, v), leaves, "qkv"):
        assert_close(t.grad, r.grad, GRAD_ATOL[dtype], f"{name} d{n}")


def test_causal_rows_without_keys_are_zero():
    q, k, v = make(1, 6, 2, 2, 2, 8, torch.float16)
    out = fa.flash_attn_func(q, k, v, causal=True)
    assert torch.all(out[:, :4].cpu() == 0) and torch.any(out[:, 4:].cpu() != 0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_alibi_dense(dtype):
    b, sq, sk, h = 2, 6, 9, 4
    q, k, v = make(b, sq, sk, h, h, 16, dtype, grad=True)
    slopes = torch.tensor([[0.5, 0.25, 0.125, 0.0625], [0.3, 0.2, 0.1, 0.05]], dtype=torch.float32).to("npu")
    out = fa.flash_attn_func(q, k, v, causal=True, alibi_slopes=slopes)
    ref, _, _ = reference(q, k, v, causal=True, alibi=slopes)
    # pse is rounded to the input dtype on the NPU (bias/scale up to ~8·sqrt(16) = 32 here)
    tol = {torch.float16: 1e-2, torch.bfloat16: 8e-2, torch.float32: 2e-5}[dtype]
    assert_close(out, ref, tol, "alibi")
    with pytest.raises(RuntimeError, match="fp32"):
        fa.flash_attn_func(q, k, v, alibi_slopes=slopes.half())


def _pack(lengths, h, d, dtype, seed, grad):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(sum(lengths), h, d, generator=g).to(dtype).to("npu").requires_grad_(grad)
    cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), dtype=torch.int32).to("npu")
    return t, cu


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kwargs", [{}, {"causal": True}, {"window_size": (2, 1)}, {"causal": True, "window_size": (3, 3)}],
                         ids=["full", "causal", "window", "causal_window"])
def test_varlen_matches_per_sequence_reference(kwargs, dtype):
    lq, lk, h, hk, d = [3, 1, 5], [4, 6, 5], 4, 2, 8
    q, cq = _pack(lq, h, d, dtype, 0, False)
    k, ck = _pack(lk, hk, d, dtype, 1, False)
    v, _ = _pack(lk, hk, d, dtype, 2, False)
    out, lse, _ = fa.flash_attn_varlen_func(q, k, v, cq, ck, max(lq), max(lk), return_attn_probs=True, **kwargs)
    assert out.shape == q.shape and lse.shape == (h, sum(lq))
    qs = ks = 0
    for a, c in zip(lq, lk):
        sl_q, sl_k = slice(qs, qs + a), slice(ks, ks + c)
        ref, ref_lse, _ = reference(q[sl_q].unsqueeze(0), k[sl_k].unsqueeze(0), v[sl_k].unsqueeze(0),
                                    kwargs.get("causal", False), kwargs.get("window_size", (-1, -1)))
        assert_close(out[sl_q], ref[0], ATOL[dtype], "varlen out")
        finite = torch.isfinite(ref_lse[0])
        assert_close(lse[:, sl_q].cpu()[finite], ref_lse[0][finite], 1e-2 if dtype != torch.float32 else 1e-5, "lse")
        qs += a
        ks += c


def test_varlen_gradients_match_reference():
    lq, lk, h, d = [4, 2], [4, 5], 2, 8
    q, cq = _pack(lq, h, d, torch.float32, 0, True)
    k, ck = _pack(lk, h, d, torch.float32, 1, True)
    v, _ = _pack(lk, h, d, torch.float32, 2, True)
    out = fa.flash_attn_varlen_func(q, k, v, cq, ck, 4, 5, causal=True)
    out.sum().backward()
    qd, kd, vd = (t.detach().cpu().double().requires_grad_(True) for t in (q, k, v))
    grads = torch.autograd.grad(_ref_varlen_sum(qd, kd, vd, lq, lk), (qd, kd, vd))
    for t, g, n in zip((q, k, v), grads, "qkv"):
        assert_close(t.grad, g, 1e-4, f"varlen d{n}")


def _ref_varlen_sum(q, k, v, lq, lk):
    total, qs, ks = 0, 0, 0
    for a, c in zip(lq, lk):
        qi, ki, vi = q[qs:qs + a], k[ks:ks + c], v[ks:ks + c]
        s = torch.einsum("qhd,khd->hqk", qi, ki) / math.sqrt(q.shape[-1])
        i = torch.arange(a).view(a, 1)
        j = torch.arange(c).view(1, c)
        s = s.masked_fill(j > i + c - a, float("-inf"))
        total = total + torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), vi).sum()
        qs, ks = qs + a, ks + c
    return total


def test_varlen_alibi_per_sequence():
    lq, h, d = [3, 5], 2, 8
    q, cq = _pack(lq, h, d, torch.float32, 0, False)
    k, _ = _pack(lq, h, d, torch.float32, 1, False)
    v, _ = _pack(lq, h, d, torch.float32, 2, False)
    slopes = torch.tensor([0.5, 0.1]).to("npu")
    out = fa.flash_attn_varlen_func(q, k, v, cq, cq, 5, 5, causal=True, alibi_slopes=slopes)
    ref, _, _ = reference(q[3:].unsqueeze(0), k[3:].unsqueeze(0), v[3:].unsqueeze(0), True, alibi=slopes)
    assert_close(out[3:], ref[0], 2e-5, "varlen alibi")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_packed_variants(dtype):
    q, k, v = make(2, 5, 5, 4, 4, 8, dtype)
    expected = fa.flash_attn_func(q, k, v, causal=True)
    qkv = torch.stack([q, k, v], dim=2)
    assert torch.equal(fa.flash_attn_qkvpacked_func(qkv, causal=True).cpu(), expected.cpu())
    assert torch.equal(fa.flash_attn_kvpacked_func(q, torch.stack([k, v], dim=2), causal=True).cpu(), expected.cpu())
    flat = qkv.reshape(10, 3, 4, 8)
    cu = torch.tensor([0, 5, 10], dtype=torch.int32).to("npu")
    packed = fa.flash_attn_varlen_qkvpacked_func(flat, cu, 5, causal=True)
    assert_close(packed.reshape(2, 5, 4, 8), expected.cpu().double(), ATOL[dtype], "varlen qkvpacked")
    kv = flat[:, 1:]
    packed = fa.flash_attn_varlen_kvpacked_func(flat[:, 0], kv, cu, cu, 5, 5, causal=True)
    assert_close(packed.reshape(2, 5, 4, 8), expected.cpu().double(), ATOL[dtype], "varlen kvpacked")


def test_dropout_is_unbiased_and_seeded():
    q, k, v = make(2, 16, 16, 4, 4, 8, torch.float32)
    ones = torch.ones_like(v)
    torch.manual_seed(0)
    a = fa.flash_attn_func(q, k, ones, dropout_p=0.3)
    torch.manual_seed(0)
    b = fa.flash_attn_func(q, k, ones, dropout_p=0.3)
    assert torch.equal(a.cpu(), b.cpu())
    assert not torch.allclose(a.cpu(), torch.ones(a.shape))  # dropout applied ...
    assert abs(a.cpu().mean().item() - 1.0) < 0.05  # ... and rescaled by 1/(1-p)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
def test_with_kvcache_appends_and_attends(dtype):
    b, s_cache, h, hk, d = 2, 12, 4, 2, 8
    g = torch.Generator().manual_seed(0)
    k_cache = torch.zeros(b, s_cache, hk, d, dtype=dtype).to("npu")
    v_cache = torch.zeros(b, s_cache, hk, d, dtype=dtype).to("npu")
    prefix = [torch.randn(b, 5, hk, d, generator=g).to(dtype) for _ in range(2)]
    k_cache[:, :5] = prefix[0].to("npu")
    v_cache[:, :5] = prefix[1].to("npu")
    seqlens = torch.tensor([5, 3], dtype=torch.int32).to("npu")
    q = torch.randn(b, 2, h, d, generator=g).to(dtype).to("npu")
    k_new = torch.randn(b, 2, hk, d, generator=g).to(dtype).to("npu")
    v_new = torch.randn(b, 2, hk, d, generator=g).to(dtype).to("npu")
    out, lse = fa.flash_attn_with_kvcache(q, k_cache, v_cache, k_new, v_new, cache_seqlens=seqlens, causal=True,
                                          return_softmax_lse=True)
    assert out.shape == q.shape and lse.shape == (b, h, 2)
    assert torch.equal(k_cache[1, 3:5].cpu(), k_new[1].cpu())  # written in place at cache_seqlens
    assert torch.equal(k_cache[0, 5:7].cpu(), k_new[0].cpu())
    for i, n in enumerate([7, 5]):
        ref, ref_lse, _ = reference(q[i:i + 1], k_cache[i:i + 1, :n], v_cache[i:i + 1, :n], causal=True)
        assert_close(out[i:i + 1], ref, ATOL[dtype], "kvcache out")
        assert_close(lse[i:i + 1].cpu(), ref_lse, 1e-2, "kvcache lse")


def test_with_kvcache_batch_idx_and_int_seqlens():
    g = torch.Generator().manual_seed(0)
    k_cache = torch.randn(3, 6, 2, 8, generator=g).to("npu")
    v_cache = torch.randn(3, 6, 2, 8, generator=g).to("npu")
    q = torch.randn(2, 1, 2, 8, generator=g).to("npu")
    idx = torch.tensor([2, 0], dtype=torch.int32).to("npu")
    out = fa.flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=4, cache_batch_idx=idx)
    for i, row in enumerate([2, 0]):
        ref, _, _ = reference(q[i:i + 1], k_cache[row:row + 1, :4], v_cache[row:row + 1, :4])
        assert_close(out[i:i + 1], ref, 2e-5, "kvcache batch idx")


def test_unsupported_features_raise_clearly():
    q, k, v = make(1, 4, 4, 2, 2, 8, torch.float16)
    with pytest.raises(NotImplementedError, match="softcap.*sdpa"):
        fa.flash_attn_func(q, k, v, softcap=30.0)
    with pytest.raises(NotImplementedError, match="block_table"):
        fa.flash_attn_with_kvcache(q, k, v, block_table=torch.zeros(1, 1, dtype=torch.int32))
    with pytest.raises(RuntimeError, match="rotary.*new k and v"):
        fa.flash_attn_with_kvcache(q, k, v, rotary_cos=torch.zeros(4, 4), rotary_sin=torch.zeros(4, 4))
    with pytest.raises(RuntimeError, match="fp16 and bf16"):
        fa.flash_attn_func(*(t.cpu().double() for t in (q, k, v)))
    with pytest.raises(RuntimeError, match="expected an npu tensor"):
        fa.flash_attn_func(q.cpu(), k.cpu(), v.cpu())
    with pytest.raises(RuntimeError, match="divide number of heads"):
        fa.flash_attn_func(q, k[:, :, :1].repeat(1, 1, 3, 1), v[:, :, :1].repeat(1, 1, 3, 1))
    cu = torch.tensor([0, 4], dtype=torch.int64)
    with pytest.raises(RuntimeError, match="int32"):
        fa.flash_attn_varlen_func(q[0], k[0], v[0], cu, cu, 4, 4)


def test_bert_padding_roundtrip_and_arity():
    x = torch.randn(3, 5, 4, 2, requires_grad=True)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    packed, indices, cu, max_len, used = bert_padding.unpad_input(x, mask)
    assert packed.shape == (9, 4, 2) and cu.tolist() == [0, 3, 8, 9] and cu.dtype == torch.int32
    assert max_len == 5 and isinstance(max_len, int) and used.tolist() == [3, 5, 1]
    back = bert_padding.pad_input(packed, indices, 3, 5)
    assert torch.equal(back, x.detach() * mask[..., None, None])
    back.sum().backward()
    assert torch.equal(x.grad, mask[..., None, None].expand_as(x).float())
    unused = torch.tensor([[0, 0, 0, 1, 0], [0] * 5, [0] * 5])
    packed, _, cu, _, used = bert_padding.unpad_input(x, mask, unused)
    assert cu.tolist() == [0, 4, 9, 10] and used.tolist() == [3, 5, 1]
    lengths = torch.tensor([[2, 3, 0, 0, 0], [5, 0, 0, 0, 0], [1, 1, 0, 0, 0]])
    packed, idx, cu, m = bert_padding.unpad_input_for_concatenated_sequences(x, lengths)
    assert cu.tolist() == [0, 2, 5, 10, 11, 12] and m == 5 and packed.shape[0] == 12


def test_unpad_varlen_pad_equals_masked_dense():
    """The HF pattern: unpad -> flash_attn_varlen_func -> pad_input equals dense attention per row."""
    b, s, h, d = 2, 6, 2, 8
    q, k, v = make(b, s, s, h, h, d, torch.float32)
    mask = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]]).to("npu")
    qu, idx, cu, mx, _ = bert_padding.unpad_input(q, mask)
    ku, _, _, _, _ = bert_padding.unpad_input(k, mask)
    vu, _, _, _, _ = bert_padding.unpad_input(v, mask)
    out = bert_padding.pad_input(fa.flash_attn_varlen_func(qu, ku, vu, cu, cu, mx, mx, causal=True), idx, b, s)
    ref0, _, _ = reference(q[:1, :4], k[:1, :4], v[:1, :4], causal=True)
    ref1, _, _ = reference(q[1:], k[1:], v[1:], causal=True)
    assert_close(out[:1, :4], ref0, 2e-5, "row 0")
    assert_close(out[1:], ref1, 2e-5, "row 1")
    assert torch.all(out[0, 4:].cpu() == 0)


def _rope_reference(x, pos, theta, interleaved):
    """Rotary embedding by complex multiplication (interleaved pairs) or rotate_half (NeoX halves)."""
    x = x.cpu().double()
    rd = 2 * theta.shape[0]
    ang = pos.view(*pos.shape, 1, 1).double() * theta.double()  # [b, s, 1, rd/2]
    rot = x[..., :rd]
    if interleaved:
        z = torch.view_as_complex(rot.reshape(*rot.shape[:-1], rd // 2, 2).contiguous())
        out = torch.view_as_real(z * torch.polar(torch.ones_like(ang), ang)).flatten(-2)
    else:
        cos, sin = torch.cat([ang.cos()] * 2, -1), torch.cat([ang.sin()] * 2, -1)
        x1, x2 = rot[..., : rd // 2], rot[..., rd // 2:]
        out = rot * cos + torch.cat([-x2, x1], -1) * sin
    return torch.cat([out, x[..., rd:]], -1)


@pytest.mark.parametrize("interleaved", [True, False])
@pytest.mark.parametrize("causal", [True, False])
def test_with_kvcache_rotary(interleaved, causal):
    b, s_cache, h, d, rd = 2, 10, 2, 16, 8
    g = torch.Generator().manual_seed(0)
    theta = 1.0 / (10000 ** (torch.arange(0, rd, 2).float() / rd))
    positions = torch.arange(32).float()
    cos = torch.cos(positions[:, None] * theta).to("npu")
    sin = torch.sin(positions[:, None] * theta).to("npu")
    k_cache = torch.randn(b, s_cache, h, d, generator=g).to("npu")
    v_cache = torch.randn(b, s_cache, h, d, generator=g).to("npu")
    k_before = k_cache.cpu().clone()
    q = torch.randn(b, 2, h, d, generator=g).to("npu")
    k_new = torch.randn(b, 2, h, d, generator=g).to("npu")
    v_new = torch.randn(b, 2, h, d, generator=g).to("npu")
    seqlens = torch.tensor([3, 6], dtype=torch.int32).to("npu")
    out = fa.flash_attn_with_kvcache(q, k_cache, v_cache, k_new, v_new, rotary_cos=cos, rotary_sin=sin,
                                     cache_seqlens=seqlens, causal=causal, rotary_interleaved=interleaved)
    for i, n in enumerate([3, 6]):
        kpos = torch.tensor([[n, n + 1]])
        qpos = kpos if causal else torch.tensor([[n, n]])
        k_rot = _rope_reference(k_new[i:i + 1], kpos, theta, interleaved)
        q_rot = _rope_reference(q[i:i + 1], qpos, theta, interleaved)
        assert_close(k_cache[i, n:n + 2], k_rot[0], 1e-5, "rotated k written to the cache")
        assert torch.equal(k_cache[i, :n].cpu(), k_before[i, :n])
        keys = torch.cat([k_before[i:i + 1, :n].double(), k_rot], 1)
        ref, _, _ = reference(q_rot, keys, v_cache[i:i + 1, :n + 2], causal=causal)
        assert_close(out[i:i + 1], ref, 2e-5, "kvcache rotary out")


def _tables(n, rd, dtype):
    theta = 1.0 / (10000 ** (torch.arange(0, rd, 2).float() / rd))
    ang = torch.arange(n).float()[:, None] * theta
    return theta, ang.cos().to(dtype).to("npu"), ang.sin().to(dtype).to("npu")


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
def test_apply_rotary_dense_and_offsets(interleaved, dtype):
    theta, cos, sin = _tables(16, 8, torch.float32)
    cos, sin = cos.to(dtype), sin.to(dtype)
    x = torch.randn(2, 5, 3, 12, generator=torch.Generator().manual_seed(0)).to(dtype).to("npu")
    offsets = torch.tensor([0, 4], dtype=torch.int32).to("npu")
    out = rotary.apply_rotary(x, cos, sin, seqlen_offsets=offsets, interleaved=interleaved)
    pos = torch.arange(5).view(1, 5) + torch.tensor([[0], [4]])
    # the reference uses float64 angles; the tables above are rounded to `dtype`
    assert_close(out, _rope_reference(x, pos, theta, interleaved), 2e-3 if dtype == torch.float16 else 2e-5, "rope")
    back = rotary.apply_rotary(out, cos, sin, seqlen_offsets=offsets, interleaved=interleaved, conjugate=True)
    assert_close(back, x.cpu().double(), 5e-3 if dtype == torch.float16 else 1e-5, "conjugate inverts")
    y = x.clone()
    assert rotary.apply_rotary_emb(y, cos, sin, interleaved=interleaved, inplace=True, seqlen_offsets=2) is y
    assert_close(y, _rope_reference(x, torch.arange(5).view(1, 5) + 2, theta, interleaved),
                 2e-3 if dtype == torch.float16 else 2e-5, "inplace")
    with pytest.raises(RuntimeError, match="same dtype"):
        rotary.apply_rotary(x, cos.float() if dtype != torch.float32 else cos.half(), sin)


def test_apply_rotary_varlen_and_packed_helpers():
    theta, cos, sin = _tables(16, 4, torch.float32)
    x = torch.randn(7, 2, 8, generator=torch.Generator().manual_seed(1)).to("npu")
    cu = torch.tensor([0, 3, 7], dtype=torch.int32).to("npu")
    out = rotary.apply_rotary(x, cos, sin, cu_seqlens=cu, max_seqlen=4, seqlen_offsets=1)
    expected = torch.cat([_rope_reference(x[:3].unsqueeze(0), torch.arange(3).view(1, 3) + 1, theta, False)[0],
                          _rope_reference(x[3:].unsqueeze(0), torch.arange(4).view(1, 4) + 1, theta, False)[0]])
    assert_close(out, expected, 2e-5, "varlen rope")
    qkv = torch.randn(2, 5, 3, 2, 8, generator=torch.Generator().manual_seed(2)).to("npu")
    original = qkv.clone()
    rotary.apply_rotary_emb_qkv_(qkv, cos, sin)
    pos = torch.arange(5).view(1, 5).expand(2, 5)
    assert_close(qkv[:, :, 0], _rope_reference(original[:, :, 0], pos, theta, False), 2e-5, "q")
    assert_close(qkv[:, :, 1], _rope_reference(original[:, :, 1], pos, theta, False), 2e-5, "k")
    assert torch.equal(qkv[:, :, 2].cpu(), original[:, :, 2].cpu())
    emb = rotary.RotaryEmbedding(4).to("npu")
    qkv2 = original.clone().requires_grad_(False)
    out = emb(qkv2.clone())
    assert_close(out[:, :, 0], _rope_reference(original[:, :, 0], pos, theta, False), 2e-5, "RotaryEmbedding")
    leaf = original.clone().requires_grad_(True)
    rotary.apply_rotary_emb(leaf[:, :, 0], cos, sin).sum().backward()
    assert leaf.grad is not None and leaf.grad[:, :, 1].abs().sum() == 0


@pytest.mark.parametrize("kwargs", [{}, {"causal": True}, {"window_size": (3, 1)}], ids=["full", "causal", "window"])
def test_low_level_forward_and_backward_match_reference(kwargs):
    """flash_attn.flash_attn_interface._wrapped_flash_attn_forward / _backward, which diffusers' flash
    backend (and ring-attention code) import: flash-attn's signatures, lse (B, H, Sq), gradients written
    into dq/dk/dv, softmax_d returned (was: missing, so diffusers printed "flash_attn is installed but failed
    to import: _wrapped_flash_attn_backward")."""
    from ascend_compat.ecosystem.dropins.flash_attn import interface

    causal, window = kwargs.get("causal", False), kwargs.get("window_size", (-1, -1))
    q, k, v = make(2, 6, 8, 4, 2, 16, torch.float32)
    scale = 0.25
    out, lse, probs, rng_state = interface._wrapped_flash_attn_forward(
        q, k, v, 0.0, scale, causal, window[0], window[1], 0.0, None, False)
    assert lse.shape == (2, 4, 6) and lse.dtype == torch.float32 and probs.numel() == 0
    assert rng_state.shape == (2,) and rng_state.dtype == torch.int64
    qr, kr, vr = (t.detach().clone().requires_grad_() for t in (q, k, v))
    ref, ref_lse, leaves = reference(qr, kr, vr, causal, window, scale)
    assert_close(out, ref, ATOL[torch.float32], "out")
    assert_close(lse.cpu(), ref_lse, 1e-5, "lse")
    dout = torch.randn(out.shape, generator=torch.Generator().manual_seed(3))
    dq, dk, dv = (torch.empty_like(t) for t in (q, k, v))
    softmax_d = interface._wrapped_flash_attn_backward(
        dout.to("npu"), q, k, v, out, lse, dq, dk, dv, 0.0, scale, causal, window[0], window[1], 0.0, None, False,
        rng_state)
    ref.backward(dout.double())
    for t, r, n in zip((dq, dk, dv), leaves, "qkv"):
        assert_close(t, r.grad, GRAD_ATOL[torch.float32], f"d{n}")
    assert_close(softmax_d.cpu(), (dout.double() * ref.detach()).sum(-1).transpose(1, 2), 1e-4, "softmax_d")
    assert interface._flash_attn_forward is interface._wrapped_flash_attn_forward
    with pytest.raises(NotImplementedError, match="dropout"):
        interface._wrapped_flash_attn_backward(dout.to("npu"), q, k, v, out, lse, dq, dk, dv, 0.1, scale, causal,
                                               -1, -1, 0.0, None, False, rng_state)
