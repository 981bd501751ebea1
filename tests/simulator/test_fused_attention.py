"""npu_fusion_attention reference against an independent float64 attention written here.

The reference below builds every mask with explicit per-position rules taken from torch_npu's
documentation (not from the implementation) and computes softmax(scale*(QK^T + pse)) V per
(batch, head) in float64; fully masked rows give zeros.
"""
from __future__ import annotations

import math

import pytest
import torch

from ascend_compat.simulator.torch_npu.fused import npu_fusion_attention, npu_fusion_attention_grad
from ascend_compat.simulator.torch_npu.fused.attention import attention_core


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)


BIG = 2147483647
TRIU = torch.triu(torch.ones(2048, 2048), diagonal=1).bool()


def allowed_matrix(mode, sq, skv, pre=BIG, nxt=BIG, user_mask=None, prefix=None):
    """Bool [sq, skv]: True where query row i may attend key column j (docs' definitions)."""
    out = torch.zeros(sq, skv, dtype=torch.bool)
    for i in range(sq):
        for j in range(skv):
            if mode == "full":
                ok = True
            elif mode == 0:
                ok = (not bool(user_mask[i, j])) and (i - pre <= j <= i + nxt)
            elif mode == 1:
                ok = not bool(user_mask[i, j])
            elif mode == 2:  # top-left causal
                ok = j <= i
            elif mode == 3:  # bottom-right causal
                ok = j <= i + (skv - sq)
            elif mode == 4:  # band around the bottom-right-aligned diagonal
                ok = i + (skv - sq) - pre <= j <= i + (skv - sq) + nxt
            elif mode == 6:  # bottom-right causal plus the first prefix columns
                ok = j <= i + (skv - sq) or j < prefix
            out[i, j] = ok
    return out


def ref_attention(q, k, v, allowed, scale, pse=None, sink=None):
    """q [Nq,Sq,D], k/v [Nkv,Skv,D*] in float64; allowed [Sq,Skv]; returns out, max, sum per row."""
    nq, sq, _ = q.shape
    nkv, skv, dv = v.shape
    out = torch.zeros(nq, sq, dv, dtype=torch.float64)
    rmax = torch.full((nq, sq), float("-inf"), dtype=torch.float64)
    rsum = torch.zeros(nq, sq, dtype=torch.float64)
    for h in range(nq):
        g = h // (nq // nkv)
        for i in range(sq):
            logits = []
            for j in range(skv):
                if allowed[i, j]:
                    s = float(q[h, i] @ k[g, j])
                    if pse is not None:
                        s += float(pse[h, i, j])
                    logits.append((j, s * scale))
            extra = [float(sink[h])] if sink is not None else []
            vals = [s for _, s in logits] + extra
            if not logits:
                if vals:
                    rmax[h, i], rsum[h, i] = vals[0], 1.0
                continue
            m = max(vals)
            z = sum(math.exp(s - m) for s in vals)
            rmax[h, i], rsum[h, i] = m, z
            for j, s in logits:
                out[h, i] += math.exp(s - m) / z * v[g, j].double()
    return out, rmax, rsum


def bnsd(t, layout, n):
    """Convert a tensor in ``layout`` to [B, N, S, D] for the reference."""
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(1, 2)
    if layout == "SBH":
        t = t.transpose(0, 1)
    b, s, h = t.shape
    return t.reshape(b, s, n, h // n).transpose(1, 2)


def make(layout, b, n, s, d, dtype=torch.float32, gen=None):
    shape = {"BNSD": (b, n, s, d), "BSND": (b, s, n, d), "BSH": (b, s, n * d), "SBH": (s, b, n * d)}[layout]
    return torch.randn(*shape, generator=gen, dtype=torch.float32).to(dtype)


def check_dense(layout, b, nq, nkv, sq, skv, d, dv, mode, *, pre=BIG, nxt=BIG, dtype=torch.float32, tol=2e-5,
                use_pse=False, prefix=None, sink=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = make(layout, b, nq, sq, d, dtype, g)
    k = make(layout, b, nkv, skv, d, dtype, g)
    v = make(layout, b, nkv, skv, dv, dtype, g)
    scale = 1 / math.sqrt(d)
    user = torch.rand(b, 1, sq, skv, generator=g) < 0.3 if mode in (0, 1) else None
    if mode == 0 and (pre < BIG or nxt < BIG):
        # the docs require the explicit mask to agree with the band; build it so it does
        band = torch.zeros(sq, skv, dtype=torch.bool)
        for i in range(sq):
            for j in range(skv):
                band[i, j] = i - pre <= j <= i + nxt
        user = user | ~band
    pse = torch.randn(b, nq, sq, skv, generator=g).to(dtype) if use_pse else None
    snk = torch.linspace(-0.5, 0.5, nq) if sink else None
    mask = {None: None, 0: user, 1: user, 2: TRIU, 3: TRIU, 4: TRIU, 6: PREFIX_MASK}.get(mode, None)
    res = npu_fusion_attention(q, k, v, nq, layout, pse=pse, atten_mask=mask, scale=scale, pre_tockens=pre,
                               next_tockens=nxt, sparse_mode=mode or 0, prefix=prefix, sink=snk)
    out, smax, ssum, sout, seed_, off, numels = res
    assert out.dtype == dtype
    assert tuple(out.shape) == tuple(q.shape[:-1]) + (nq * dv if layout in ("BSH", "SBH") else dv,)
    assert smax.dtype == torch.float32 and tuple(smax.shape) == (b, nq, sq, 8)
    assert ssum.shape == smax.shape and sout.numel() == 0
    assert (seed_, off, numels) == (0, 0, b * nq * sq * skv)
    qb, kb, vb = (bnsd(t, layout, nn).double() for t, nn in ((q, nq), (k, nkv), (v, nkv)))
    ob = bnsd(out, layout, nq).double()
    for bi in range(b):
        if mode is None:
            allowed = allowed_matrix("full", sq, skv)
        else:
            allowed = allowed_matrix(mode, sq, skv, pre, nxt, user[bi, 0] if user is not None else None,
                                     prefix[bi] if prefix else None)
        ro, rm, rs = ref_attention(qb[bi], kb[bi], vb[bi], allowed, scale,
                                   pse[bi].double() if pse is not None else None, snk)
        torch.testing.assert_close(ob[bi], ro, atol=tol, rtol=tol)
        finite = torch.isfinite(rm)
        torch.testing.assert_close(smax[bi, ..., 0].double()[finite], rm[finite], atol=tol * 10, rtol=tol * 10)
        torch.testing.assert_close(ssum[bi, ..., 0].double()[finite], rs[finite], atol=tol * 10, rtol=tol * 10)
        assert torch.all(smax[bi, ..., 1:] == smax[bi, ..., :1])


PREFIX_MASK = torch.cat([TRIU, torch.cat([torch.zeros(1024, 1024), torch.ones(1024, 1024)], 1).bool()], 0)


@pytest.mark.parametrize("layout", ["BSH", "SBH", "BSND", "BNSD"])
def test_layouts_gqa_no_mask(layout):
    check_dense(layout, 2, 4, 2, 5, 6, 8, 8, None)


@pytest.mark.parametrize("layout", ["BSND", "BNSD"])
def test_mqa_and_smaller_value_head_dim(layout):
    check_dense(layout, 1, 4, 1, 4, 5, 8, 6, None)


@pytest.mark.parametrize("sq,skv", [(5, 5), (4, 7), (7, 4)])
@pytest.mark.parametrize("mode", [2, 3])
def test_causal_modes(mode, sq, skv):
    check_dense("BNSD", 2, 2, 1, sq, skv, 8, 8, mode)


@pytest.mark.parametrize("pre,nxt", [(2, 1), (3, 0), (5, -1), (-1, 3)])
def test_band_mode_4(pre, nxt):
    check_dense("BSND", 1, 2, 2, 6, 8, 8, 8, 4, pre=pre, nxt=nxt)


@pytest.mark.parametrize("pre,nxt", [(BIG, BIG), (2, 1), (6, 0)])
def test_mode_0_user_mask_and_band(pre, nxt):
    check_dense("BSH", 2, 2, 2, 6, 6, 8, 8, 0, pre=pre, nxt=nxt)


def test_mode_1_all_mask():
    check_dense("SBH", 2, 2, 1, 5, 7, 8, 8, 1)


def test_mode_6_prefix_compressed():
    check_dense("BNSD", 2, 2, 2, 4, 7, 8, 8, 6, prefix=[2, 5])


def test_pse_added_before_scale():
    check_dense("BNSD", 2, 2, 2, 4, 5, 8, 8, None, use_pse=True)


def test_sink_logit():
    check_dense("BNSD", 1, 4, 2, 4, 5, 8, 8, 3, sink=True)


@pytest.mark.parametrize("dtype,tol", [(torch.float16, 2e-3), (torch.bfloat16, 2e-2)])
def test_half_precision_dtypes(dtype, tol):
    check_dense("BSND", 2, 4, 2, 6, 6, 16, 16, 3, dtype=dtype, tol=tol)


def test_fully_masked_rows_are_zero():
    q, k, v = torch.randn(1, 1, 6, 4), torch.randn(1, 1, 3, 4), torch.randn(1, 1, 3, 4)
    out, smax, ssum = npu_fusion_attention(q, k, v, 1, "BNSD", atten_mask=TRIU, sparse_mode=3)[:3]
    assert torch.all(out[0, 0, :3] == 0) and torch.all(out[0, 0, 3:] != 0)
    assert torch.all(torch.isneginf(smax[0, 0, :3])) and torch.all(ssum[0, 0, :3] == 0)


# ----------------------------------------------------------------------------- varlen TND
def cum(lengths):
    out, acc = [], 0
    for n in lengths:
        acc += n
        out.append(acc)
    return out


@pytest.mark.parametrize("mode,pre,nxt", [(None, BIG, BIG), (2, BIG, BIG), (3, BIG, BIG), (4, 2, 1), (7, 6, -1),
                                          (8, 4, 1), (1, BIG, BIG), (0, 3, 0)])
def test_varlen_tnd(mode, pre, nxt):
    qlens, kvlens = [3, 0, 5, 2], [4, 0, 5, 6]
    nq, nkv, d = 4, 2, 8
    g = torch.Generator().manual_seed(1)
    q = torch.randn(sum(qlens), nq, d, generator=g)
    k = torch.randn(sum(kvlens), nkv, d, generator=g)
    v = torch.randn(sum(kvlens), nkv, d, generator=g)
    user = torch.rand(max(qlens), max(kvlens), generator=g) < 0.3
    if mode == 0:
        for i in range(user.shape[0]):
            for j in range(user.shape[1]):
                user[i, j] = user[i, j] or not (i - pre <= j <= i + nxt)
    mask = user if mode in (0, 1) else (TRIU if mode is not None else None)
    scale = 0.3
    out, smax, ssum, _, _, _, numels = npu_fusion_attention(
        q, k, v, nq, "TND", atten_mask=mask, scale=scale, pre_tockens=pre, next_tockens=nxt,
        sparse_mode=mode or 0, actual_seq_qlen=cum(qlens), actual_seq_kvlen=tuple(cum(kvlens)),
        softmax_layout="TND")
    assert out.shape == q.shape and smax.shape == (sum(qlens), nq, 8)
    assert numels == nq * sum(a * b for a, b in zip(qlens, kvlens))
    qs = ks = 0
    for bi, (lq, lk) in enumerate(zip(qlens, kvlens)):
        if mode is None:
            allowed = allowed_matrix("full", lq, lk)
        elif mode in (0, 1):
            allowed = allowed_matrix(mode, lq, lk, pre, nxt, user)
        elif mode == 7:  # sequence-parallel split of mode 3: the last batch is a bottom-right band
            allowed = allowed_matrix(4 if bi == 3 else 3, lq, lk, pre, nxt)
        elif mode == 8:  # split of mode 2: the first batch is a bottom-right band
            allowed = allowed_matrix(4 if bi == 0 else 2, lq, lk, pre, nxt)
        else:
            allowed = allowed_matrix(mode, lq, lk, pre, nxt)
        qb = q[qs:qs + lq].transpose(0, 1).double()
        kb = k[ks:ks + lk].transpose(0, 1).double()
        vb = v[ks:ks + lk].transpose(0, 1).double()
        ro, rm, _ = ref_attention(qb, kb, vb, allowed, scale)
        torch.testing.assert_close(out[qs:qs + lq].transpose(0, 1).double(), ro, atol=2e-5, rtol=2e-5)
        finite = torch.isfinite(rm)
        torch.testing.assert_close(smax[qs:qs + lq, :, 0].transpose(0, 1).double()[finite], rm[finite],
                                   atol=1e-4, rtol=1e-4)
        qs += lq
        ks += lk


def test_varlen_softmax_default_layout_is_n_major():
    q = torch.randn(5, 2, 8)
    res_ntd = npu_fusion_attention(q, q, q, 2, "TND", actual_seq_qlen=[2, 5], actual_seq_kvlen=[2, 5])
    res_tnd = npu_fusion_attention(q, q, q, 2, "TND", actual_seq_qlen=[2, 5], actual_seq_kvlen=[2, 5],
                                   softmax_layout="TND")
    assert res_ntd[1].shape == res_tnd[1].shape == (5, 2, 8)
    torch.testing.assert_close(res_ntd[1].reshape(2, 5, 8), res_tnd[1].transpose(0, 1))


def test_varlen_trailing_zero_batches_are_skipped():
    q = torch.randn(6, 1, 4)
    out = npu_fusion_attention(q, q, q, 1, "TND", actual_seq_qlen=[2, 5, 0, 0], actual_seq_kvlen=[2, 5, 0, 0])[0]
    assert torch.all(out[5:] == 0) and torch.all(out[:5] != 0)
    ref = npu_fusion_attention(q[:5], q[:5], q[:5], 1, "TND", actual_seq_qlen=[2, 5], actual_seq_kvlen=[2, 5])[0]
    torch.testing.assert_close(out[:5], ref)


# ----------------------------------------------------------------------------- dropout
def test_keep_prob_one_is_deterministic_identity():
    q = torch.randn(1, 2, 4, 8)
    a = npu_fusion_attention(q, q, q, 2, "BNSD", keep_prob=1.0)
    b = npu_fusion_attention(q, q, q, 2, "BNSD")
    assert torch.equal(a[0], b[0]) and a[4:6] == (0, 0)


def test_dropout_statistics_seed_and_replay():
    b, n, s = 2, 2, 64
    q = torch.randn(b, n, s, s) * 0.1
    k = torch.randn(b, n, s, s) * 0.1
    v = torch.eye(s).expand(b, n, s, s).contiguous()  # out == dropped-out probabilities
    torch.manual_seed(123)
    out1, _, _, _, seed1, off1, numels = npu_fusion_attention(q, k, v, n, "BNSD", keep_prob=0.75)
    out2 = npu_fusion_attention(q, k, v, n, "BNSD", keep_prob=0.75)[0]
    torch.manual_seed(123)
    out3 = npu_fusion_attention(q, k, v, n, "BNSD", keep_prob=0.75)[0]
    assert torch.equal(out1, out3) and not torch.equal(out1, out2)
    assert numels == b * n * s * s and seed1 == 123
    probs = npu_fusion_attention(q, k, v, n, "BNSD")[0]
    dropped = (out1 == 0).double().mean().item()
    assert abs(dropped - 0.25) < 0.02
    kept = out1 != 0
    torch.testing.assert_close(out1[kept], probs[kept] / 0.75)
    # the returned (seed, offset) reproduce the mask in the backward op
    dy = torch.randn_like(out1)
    qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
    torch.manual_seed(123)
    o = npu_fusion_attention(qg, kg, vg, n, "BNSD", keep_prob=0.75)[0]
    o.backward(dy)
    dq, dk, dv, dpse, dsink = npu_fusion_attention_grad(q, k, v, dy, n, "BNSD", keep_prob=0.75, seed=seed1,
                                                        offset=off1, numels=numels)
    torch.testing.assert_close(dq, qg.grad)
    torch.testing.assert_close(dv, vg.grad)
    assert dpse is None and dsink.numel() == 0


# ----------------------------------------------------------------------------- gradients
def test_gradcheck_core_float64():
    g = torch.Generator().manual_seed(3)
    q = torch.randn(1, 2, 3, 4, dtype=torch.float64, generator=g, requires_grad=True)
    k = torch.randn(1, 1, 4, 4, dtype=torch.float64, generator=g, requires_grad=True)
    v = torch.randn(1, 1, 4, 3, dtype=torch.float64, generator=g, requires_grad=True)
    pse = torch.randn(1, 2, 3, 4, dtype=torch.float64, generator=g, requires_grad=True)
    sink = torch.randn(2, dtype=torch.float64, generator=g, requires_grad=True)
    masked = torch.tensor([[False, True, True, True], [False, False, True, True], [True, True, True, True]])
    assert torch.autograd.gradcheck(lambda *a: attention_core(*a[:3], masked, a[3], 0.7, sink=a[4])[0],
                                    (q, k, v, pse, sink))


@pytest.mark.parametrize("layout,mode", [("BSH", 3), ("BNSD", 4), ("TND", 2)])
def test_public_op_gradients_match_float64_reference(layout, mode):
    g = torch.Generator().manual_seed(5)
    if layout == "TND":
        shapes = [(7, 4, 8), (7, 2, 8), (7, 2, 8)]
        kw = dict(actual_seq_qlen=[3, 7], actual_seq_kvlen=[3, 7])
    elif layout == "BSH":
        shapes = [(2, 5, 32), (2, 5, 16), (2, 5, 16)]
        kw = {}
    else:
        shapes = [(2, 4, 5, 8), (2, 2, 5, 8), (2, 2, 5, 8)]
        kw = dict(pre_tockens=2, next_tockens=0)
    ins = [torch.randn(*s, generator=g) for s in shapes]

    def run(tensors):
        return npu_fusion_attention(*tensors, 4, layout, atten_mask=TRIU, scale=0.4, sparse_mode=mode, **kw)[0]

    x32 = [t.clone().requires_grad_(True) for t in ins]
    dy = torch.randn(run(ins).shape, generator=g)
    run(x32).backward(dy)
    # float64 reference: the same maths on the internal core, which accepts float64
    x64 = [t.double().requires_grad_(True) for t in ins]
    torch.autograd.backward(_reference_forward64(x64, layout, mode, kw), dy.double())
    for a, b in zip(x32, x64):
        torch.testing.assert_close(a.grad.double(), b.grad, atol=1e-4, rtol=1e-4)
    grads = npu_fusion_attention_grad(*ins, dy, 4, layout, atten_mask=TRIU, scale_value=0.4, sparse_mode=mode,
                                      pre_tockens=kw.get("pre_tockens", BIG), next_tockens=kw.get("next_tockens", BIG),
                                      actual_seq_qlen=kw.get("actual_seq_qlen"),
                                      actual_seq_kvlen=kw.get("actual_seq_kvlen"))
    for a, gr in zip(x32, grads[:3]):
        torch.testing.assert_close(gr, a.grad)


def _reference_forward64(x, layout, mode, kw):
    q, k, v = x
    if layout == "TND":
        outs = []
        for s, e in ((0, 3), (3, 7)):
            allowed = allowed_matrix(mode, e - s, e - s)
            o = attention_core(q[s:e].transpose(0, 1)[None], k[s:e].transpose(0, 1)[None],
                               v[s:e].transpose(0, 1)[None], ~allowed, scale=0.4)[0]
            outs.append(o[0].transpose(0, 1))
        return torch.cat(outs)
    qb, kb, vb = bnsd(q, layout, 4), bnsd(k, layout, 2), bnsd(v, layout, 2)
    allowed = allowed_matrix(mode, qb.shape[2], kb.shape[2], kw.get("pre_tockens", BIG),
                             kw.get("next_tockens", BIG))
    o = attention_core(qb, kb, vb, ~allowed, scale=0.4)[0]
    if layout == "BSH":
        return o.transpose(1, 2).reshape(q.shape[0], q.shape[1], -1)
    return o


# ----------------------------------------------------------------------------- errors
def _qkv(dtype=torch.float32):
    return (torch.randn(1, 2, 4, 8, dtype=dtype),) * 3


def test_rejects_float64():
    with pytest.raises(RuntimeError, match="float64.*ERR01002|only torch.float16"):
        npu_fusion_attention(*_qkv(torch.float64), 2, "BNSD")


def test_rejects_float_mask():
    with pytest.raises(RuntimeError, match="bool or torch.uint8"):
        npu_fusion_attention(*_qkv(), 2, "BNSD", atten_mask=torch.zeros(4, 4), sparse_mode=1)


def test_rejects_wrong_compressed_mask():
    with pytest.raises(RuntimeError, match=r"\[2048, 2048\]"):
        npu_fusion_attention(*_qkv(), 2, "BNSD", atten_mask=torch.ones(4, 4).triu(1).bool(), sparse_mode=3)
    with pytest.raises(ValueError, match="compressed"):
        npu_fusion_attention(*_qkv(), 2, "BNSD", atten_mask=TRIU.T.contiguous(), sparse_mode=2)


def test_uint8_compressed_mask_accepted_and_cached_check_sees_changes():
    m = TRIU.to(torch.uint8)
    npu_fusion_attention(*_qkv(), 2, "BNSD", atten_mask=m, sparse_mode=3)
    m[0, 5] = 0  # in-place change bumps the version: must be re-validated
    with pytest.raises(ValueError):
        npu_fusion_attention(*_qkv(), 2, "BNSD", atten_mask=m, sparse_mode=3)


@pytest.mark.parametrize("kwargs,match", [
    (dict(keep_prob=0.0), "keep_prob"),
    (dict(sparse_mode=9), "sparse_mode"),
    (dict(input_layout="NSD"), "input_layout"),
])
def test_parameter_errors(kwargs, match):
    args = dict(input_layout="BNSD")
    args.update(kwargs)
    with pytest.raises(RuntimeError, match=match):
        npu_fusion_attention(*_qkv(), 2, **args)


def test_gqa_head_ratio_must_be_integer():
    q, k = torch.randn(1, 3, 4, 8), torch.randn(1, 2, 4, 8)
    with pytest.raises(RuntimeError, match="multiple"):
        npu_fusion_attention(q, k, k, 3, "BNSD")


def test_varlen_errors():
    q = torch.randn(4, 1, 8)
    with pytest.raises(RuntimeError, match=r"\[0,5\) or \(5,8\]"):
        npu_fusion_attention(q, q, q, 1, "TND", actual_seq_qlen=[4], actual_seq_kvlen=[4], sparse_mode=5)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        npu_fusion_attention(q, q, q, 1, "TND")
    with pytest.raises(TypeError, match="tuple of ints"):
        npu_fusion_attention(q, q, q, 1, "TND", actual_seq_qlen=torch.tensor([2, 4]), actual_seq_kvlen=[2, 4])
    with pytest.raises(RuntimeError, match="beyond"):
        npu_fusion_attention(q, q, q, 1, "TND", actual_seq_qlen=[2, 6], actual_seq_kvlen=[2, 4])


def test_sparse_mode_without_mask_is_full_attention_with_warning():
    q, k, v = _qkv()
    with pytest.warns(UserWarning, match="FULL attention"):
        out = npu_fusion_attention(q, k, v, 2, "BNSD", sparse_mode=3)[0]
    torch.testing.assert_close(out, npu_fusion_attention(q, k, v, 2, "BNSD")[0])


def test_actual_seq_lengths_need_tnd():
    with pytest.raises(RuntimeError, match="TND"):
        npu_fusion_attention(*_qkv(), 2, "BNSD", actual_seq_qlen=[4], actual_seq_kvlen=[4])


def test_v2_pse_types_and_rope():
    from ascend_compat.simulator.torch_npu.fused import npu_fusion_attention_v2

    g = torch.Generator().manual_seed(9)
    q, k, v = (torch.randn(1, 2, 4, 8, generator=g) for _ in range(3))
    pse = torch.randn(1, 2, 4, 4, generator=g)
    allowed = torch.ones(4, 4, dtype=torch.bool)
    for pse_type, p_ref in ((1, pse[0].double()), (0, pse[0].double() / 0.5)):
        out = npu_fusion_attention_v2(q, k, v, 2, "BNSD", pse=pse, scale=0.5, pse_type=pse_type)[0]
        ro, _, _ = ref_attention(q[0].double(), k[0].double(), v[0].double(), allowed, 0.5, p_ref)
        torch.testing.assert_close(out[0].double(), ro, atol=2e-5, rtol=2e-5)
    with pytest.raises(NotImplementedError, match="pse_type=2"):
        npu_fusion_attention_v2(q, k, v, 2, "BNSD", pse=pse, pse_type=2)
    # rope parts: Q·Kᵀ + Qr·Krᵀ, i.e. attention over the concatenated head dims
    t = torch.randn(5, 2, 8, generator=g)
    qr, kr = torch.randn(5, 2, 4, generator=g), torch.randn(5, 2, 4, generator=g)
    out = npu_fusion_attention_v2(t, t, t, 2, "TND", query_rope=qr, key_rope=kr, atten_mask=TRIU, sparse_mode=3,
                                  scale=0.3, actual_seq_qlen=[5], actual_seq_kvlen=[5])[0]
    qq, kk = torch.cat([t, qr], -1).transpose(0, 1).double(), torch.cat([t, kr], -1).transpose(0, 1).double()
    ro, _, _ = ref_attention(qq, kk, t.transpose(0, 1).double(), allowed_matrix(3, 5, 5), 0.3)
    torch.testing.assert_close(out.transpose(0, 1).double(), ro, atol=2e-5, rtol=2e-5)
