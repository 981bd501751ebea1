"""The fused-op references on the simulated ``npu`` device give the CPU results (and gradients).

One test runs in a fresh subprocess (own simulator install, generator seeding from scratch); the
others use the simulator that tests/simulator/conftest.py installs in this process.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from ascend_compat.simulator.torch_npu import fused as F

SCRIPT = textwrap.dedent(
    """
    import torch
    from ascend_compat import simulator
    simulator.install()
    from ascend_compat.simulator.torch_npu import fused as F

    def same(a, b, tol=1e-6):
        assert a.device.type == "npu", a.device
        torch.testing.assert_close(a.cpu(), b, atol=tol, rtol=tol)

    triu = torch.triu(torch.ones(2048, 2048), diagonal=1).bool()
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 6, 4, 8), torch.randn(2, 6, 2, 8), torch.randn(2, 6, 2, 8)
    dy = torch.randn(2, 6, 4, 8)
    for layout, mode in (("BSND", 3), ("BSND", 2)):
        cq, ck, cv = (t.clone().requires_grad_(True) for t in (q, k, v))
        nq, nk, nv = (t.to("npu").requires_grad_(True) for t in (q, k, v))
        c = F.npu_fusion_attention(cq, ck, cv, 4, layout, atten_mask=triu, scale=0.3, sparse_mode=mode)
        n = F.npu_fusion_attention(nq, nk, nv, 4, layout, atten_mask=triu.to("npu"), scale=0.3, sparse_mode=mode)
        same(n[0], c[0].detach()); same(n[1], c[1]); same(n[2], c[2])
        c[0].backward(dy); n[0].backward(dy.to("npu"))
        for a, b in ((nq, cq), (nk, ck), (nv, cv)):
            same(a.grad, b.grad, 1e-5)

    t = torch.randn(7, 2, 8)
    c = F.npu_fusion_attention(t, t, t, 2, "TND", actual_seq_qlen=[3, 3, 7], actual_seq_kvlen=[3, 3, 7],
                               atten_mask=triu, sparse_mode=3)
    n = F.npu_fusion_attention(t.npu(), t.npu(), t.npu(), 2, "TND", actual_seq_qlen=[3, 3, 7],
                               actual_seq_kvlen=[3, 3, 7], atten_mask=triu.npu(), sparse_mode=3)
    same(n[0], c[0])

    qn = q.npu()
    torch.npu.manual_seed(7)
    a = F.npu_fusion_attention(qn, qn, qn, 4, "BSND", keep_prob=0.6)
    b = F.npu_fusion_attention(qn, qn, qn, 4, "BSND", keep_prob=0.6)
    torch.npu.manual_seed(7)
    c = F.npu_fusion_attention(qn, qn, qn, 4, "BSND", keep_prob=0.6)
    assert torch.equal(a[0].cpu(), c[0].cpu()) and not torch.equal(a[0].cpu(), b[0].cpu())
    assert a[4] == 7 and a[5] == c[5] != b[5]

    x, w = torch.randn(3, 4, 16), torch.randn(16)
    same(F.npu_rms_norm(x.npu(), w.npu())[0], F.npu_rms_norm(x, w)[0])
    same(F.npu_add_rms_norm(x.npu(), x.npu(), w.npu())[0], F.npu_add_rms_norm(x, x, w)[0])
    same(F.npu_swiglu(x.npu()), F.npu_swiglu(x))
    same(F.npu_geglu(x.npu())[0], F.npu_geglu(x)[0])
    same(F.npu_fast_gelu(x.npu()), F.npu_fast_gelu(x))
    r = torch.randn(1, 4, 1, 16)
    same(F.npu_rotary_mul(x.view(3, 4, 4, 4).npu(), r[..., :4].npu(), r[..., 4:8].npu()),
         F.npu_rotary_mul(x.view(3, 4, 4, 4), r[..., :4], r[..., 4:8]))
    print("FUSED-NPU-OK")
    """
)


def test_fused_ops_on_simulated_npu_match_cpu():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "FUSED-NPU-OK" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]


# ----------------------------------------------------------------------------- in-process (conftest installs)
TRIU = torch.triu(torch.ones(2048, 2048), diagonal=1).bool()
SHAPES = {"BSH": (2, 5, 16), "SBH": (5, 2, 16), "BSND": (2, 5, 4, 4), "BNSD": (2, 4, 5, 4)}


@pytest.mark.parametrize("layout", sorted(SHAPES))
@pytest.mark.parametrize("mode", [0, 2, 3, 4])
def test_fusion_attention_npu_equals_cpu_with_grads(sim, layout, mode):
    torch.manual_seed(0)
    ins = [torch.randn(SHAPES[layout]) for _ in range(3)]
    mask = TRIU if mode else None
    kw = dict(atten_mask=mask, scale=0.5, sparse_mode=mode, pre_tockens=2, next_tockens=1)
    cpu_in = [t.clone().requires_grad_(True) for t in ins]
    npu_in = [t.to("npu").requires_grad_(True) for t in ins]
    c = F.npu_fusion_attention(*cpu_in, 4, layout, **kw)
    n = F.npu_fusion_attention(*npu_in, 4, layout, **{**kw, "atten_mask": mask.to("npu") if mask is not None
                                                       else None})
    assert n[0].device.type == "npu" and n[1].device.type == "npu"
    torch.testing.assert_close(n[0].cpu(), c[0].detach())
    torch.testing.assert_close(n[1].cpu(), c[1])
    dy = torch.randn_like(c[0])
    c[0].backward(dy)
    n[0].backward(dy.to("npu"))
    for a, b in zip(npu_in, cpu_in):
        assert a.grad.device.type == "npu"
        torch.testing.assert_close(a.grad.cpu(), b.grad)


def test_inference_attention_and_norms_on_npu(sim):
    q = torch.randn(1, 2, 4, 8).half()
    c = F.npu_prompt_flash_attention(q, q, q, num_heads=2, input_layout="BNSD", atten_mask=TRIU, sparse_mode=3)
    n = F.npu_prompt_flash_attention(q.npu(), q.npu(), q.npu(), num_heads=2, input_layout="BNSD",
                                     atten_mask=TRIU.npu(), sparse_mode=3)
    torch.testing.assert_close(n.cpu(), c)
    x, w = torch.randn(4, 8), torch.randn(8)
    torch.testing.assert_close(F.npu_gemma_rms_norm(x.npu(), w.npu())[0].cpu(), F.npu_gemma_rms_norm(x, w)[0])
    y = torch.randn(2, 64, 64)
    m = torch.rand(2, 64, 64) < 0.2
    torch.testing.assert_close(F.npu_scaled_masked_softmax(y.npu(), m.npu(), 0.3).cpu(),
                               F.npu_scaled_masked_softmax(y, m, 0.3))
