"""Inference attention references (PFA / IFA / FIA) against a float64 einsum attention written here."""
from __future__ import annotations

import math

import pytest
import torch

from ascend_compat.simulator.torch_npu import fused as F

TRIU = torch.triu(torch.ones(2048, 2048), diagonal=1).bool()


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)


def ref(q, k, v, allowed, scale, pse=None):
    """q [N,Sq,D], k/v [Nkv,Skv,D] float64, allowed [Sq,Skv] -> (out [N,Sq,D], lse [N,Sq])."""
    rep = q.shape[0] // k.shape[0]
    k, v = k.repeat_interleave(rep, 0), v.repeat_interleave(rep, 0)
    s = torch.einsum("nid,njd->nij", q, k) * scale
    if pse is not None:
        s = s + pse
    s = s.masked_fill(~allowed, float("-inf"))
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse.unsqueeze(-1)).nan_to_num(0.0)
    return torch.einsum("nij,njd->nid", p, v), lse


def tri(sq, skv, offset):
    i = torch.arange(sq).unsqueeze(1)
    j = torch.arange(skv).unsqueeze(0)
    return j <= i + offset


@pytest.mark.parametrize("layout", ["BSH", "BSND", "BNSD", "BNSD_BSND"])
def test_prompt_flash_attention_causal_gqa(layout):
    b, n, nkv, s, d = 2, 4, 2, 6, 16
    q4, k4, v4 = torch.randn(b, n, s, d), torch.randn(b, nkv, s, d), torch.randn(b, nkv, s, d)

    def lay(t):
        if layout in ("BNSD", "BNSD_BSND"):
            return t.half()
        t = t.transpose(1, 2)
        return (t.reshape(t.shape[0], t.shape[1], -1) if layout == "BSH" else t).half()

    scale = 1 / math.sqrt(d)
    out = F.npu_prompt_flash_attention(lay(q4), lay(k4), lay(v4), atten_mask=TRIU, num_heads=n,
                                       num_key_value_heads=nkv, scale_value=scale, input_layout=layout,
                                       sparse_mode=2)
    assert out.dtype == torch.float16
    ob = out.float()
    if layout in ("BSND", "BNSD_BSND"):
        ob = ob.transpose(1, 2)
    elif layout == "BSH":
        ob = ob.reshape(b, s, n, d).transpose(1, 2)
    for bi in range(b):
        r, _ = ref(q4[bi].half().double(), k4[bi].half().double(), v4[bi].half().double(), tri(s, s, 0), scale)
        torch.testing.assert_close(ob[bi].double(), r, atol=2e-3, rtol=2e-3)


def test_prompt_flash_attention_default_next_tokens_zero_makes_mask_causal():
    q = torch.randn(1, 1, 5, 8).half()
    mask = torch.zeros(5, 5, dtype=torch.bool)
    mask[:, 0] = True  # hide the first key from everyone
    out = F.npu_prompt_flash_attention(q, q, q, atten_mask=mask, input_layout="BNSD")
    allowed = tri(5, 5, 0) & ~mask
    allowed[0, 0] = False
    r, _ = ref(q[0].double(), q[0].double(), q[0].double(), allowed, 1.0)
    torch.testing.assert_close(out[0].double(), r, atol=2e-3, rtol=2e-3)
    assert torch.all(out[0, 0, 0] == 0)  # row 0 only had key 0: fully masked -> zeros


def test_prompt_actual_lengths_and_pse_after_scale():
    b, n, s, d = 2, 2, 6, 8
    q, k, v = (torch.randn(b, n, s, d).bfloat16() for _ in range(3))
    pse = torch.randn(b, n, s, s).bfloat16()
    out = F.npu_prompt_flash_attention(q, k, v, pse_shift=pse, actual_seq_lengths=[4, 6],
                                       actual_seq_lengths_kv=[3, 6], num_heads=n, scale_value=0.5,
                                       input_layout="BNSD")
    for bi, (lq, lk) in enumerate([(4, 3), (6, 6)]):
        r, _ = ref(q[bi, :, :lq].double(), k[bi, :, :lk].double(), v[bi, :, :lk].double(),
                   torch.ones(lq, lk, dtype=torch.bool), 0.5, pse[bi, :, :lq, :lk].double())
        torch.testing.assert_close(out[bi, :, :lq].double(), r, atol=2e-2, rtol=2e-2)
        assert torch.all(out[bi, :, lq:] == 0)


def test_incre_flash_attention_with_kv_lengths_and_mask():
    b, n, nkv, skv, d = 3, 4, 1, 7, 8
    q, k, v = torch.randn(b, 1, n * d).half(), torch.randn(b, skv, nkv * d).half(), torch.randn(b, skv, nkv * d).half()
    mask = torch.zeros(b, 1, 1, skv, dtype=torch.bool)
    mask[1, ..., 0] = True
    out = F.npu_incre_flash_attention(q, k, v, atten_mask=mask, actual_seq_lengths=[7, 5, 2], num_heads=n,
                                      num_key_value_heads=nkv, scale_value=0.3)
    assert out.shape == q.shape
    for bi, lk in enumerate([7, 5, 2]):
        qb = q[bi].view(1, n, d).transpose(0, 1).double()
        kb = k[bi, :lk].view(lk, nkv, d).transpose(0, 1).double()
        vb = v[bi, :lk].view(lk, nkv, d).transpose(0, 1).double()
        r, _ = ref(qb, kb, vb, ~mask[bi, 0, :, :lk], 0.3)
        torch.testing.assert_close(out[bi].view(n, d).double(), r[:, 0], atol=2e-3, rtol=2e-3)
    with pytest.raises(RuntimeError, match="must be 1"):
        F.npu_incre_flash_attention(k, k, v, num_heads=nkv)
    with pytest.raises(NotImplementedError, match="block_table"):
        F.npu_incre_flash_attention(q, k, v, block_table=torch.zeros(1, 1, dtype=torch.int32), num_heads=n)


@pytest.mark.parametrize("sq", [1, 5])
def test_fused_infer_attention_score_lse_and_bottom_right_causal(sq):
    b, n, skv, d = 2, 2, 6, 8
    q, k, v = torch.randn(b, n, sq, d).half(), torch.randn(b, n, skv, d).half(), torch.randn(b, n, skv, d).half()
    out, lse = F.npu_fused_infer_attention_score(q, k, v, atten_mask=TRIU, num_heads=n, scale=0.4,
                                                 input_layout="BNSD", sparse_mode=3, softmax_lse_flag=True)
    assert lse.shape == (b, n, sq, 1) and lse.dtype == torch.float32
    for bi in range(b):
        r, rl = ref(q[bi].double(), k[bi].double(), v[bi].double(), tri(sq, skv, skv - sq), 0.4)
        torch.testing.assert_close(out[bi].double(), r, atol=2e-3, rtol=2e-3)
        torch.testing.assert_close(lse[bi, ..., 0].double(), rl, atol=1e-3, rtol=1e-3)
    _, no_lse = F.npu_fused_infer_attention_score(q, k, v, num_heads=n, input_layout="BNSD")
    assert no_lse.shape == (1,) and no_lse.item() == 0


def test_fused_infer_attention_score_tnd():
    n, d = 2, 8
    q, k = torch.randn(7, n, d).half(), torch.randn(9, n, d).half()
    out, lse = F.npu_fused_infer_attention_score(q, k, k, num_heads=n, input_layout="TND",
                                                 actual_seq_lengths=[3, 7], actual_seq_lengths_kv=[4, 9],
                                                 softmax_lse_flag=True)
    assert out.shape == q.shape and lse.shape == (7, n, 1)
    for (qs, qe), (ks, ke) in (((0, 3), (0, 4)), ((3, 7), (4, 9))):
        r, _ = ref(q[qs:qe].transpose(0, 1).double(), k[ks:ke].transpose(0, 1).double(),
                   k[ks:ke].transpose(0, 1).double(), torch.ones(qe - qs, ke - ks, dtype=torch.bool), 1.0)
        torch.testing.assert_close(out[qs:qe].transpose(0, 1).double(), r, atol=2e-3, rtol=2e-3)


def test_infer_errors():
    q = torch.randn(1, 1, 4, 8)
    with pytest.raises(RuntimeError, match="float16 or bfloat16"):
        F.npu_prompt_flash_attention(q, q, q, input_layout="BNSD")
    with pytest.raises(NotImplementedError, match="sparse_mode=6"):
        F.npu_prompt_flash_attention(q.half(), q.half(), q.half(), input_layout="BNSD", sparse_mode=6)
    with pytest.raises(RuntimeError, match="num_key_value_heads"):
        F.npu_prompt_flash_attention(torch.randn(1, 3, 4, 8).half(), torch.randn(1, 2, 4, 8).half(),
                                     torch.randn(1, 2, 4, 8).half(), num_heads=3, num_key_value_heads=2,
                                     input_layout="BNSD")
