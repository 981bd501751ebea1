"""One test per pitfall in docs/simulator_pitfalls.md (pitfall 1 also has a crash canary, pitfall 10
the refusal tests in test_install.py, pitfall 11 belongs to the distributed tests)."""
from __future__ import annotations

import gc
import threading

import pytest
import torch

from ascend_compat.simulator import _memory


def test_p1_untyped_storage_on_npu_does_not_bypass_the_allocator():
    s = torch.UntypedStorage(64, device="npu")
    assert s.device == torch.device("npu:0") and s.nbytes() == 64
    s2 = torch.UntypedStorage([1, 2, 3], device="npu")
    assert torch.tensor([], dtype=torch.uint8, device="npu").set_(s2).tolist() == [1, 2, 3]
    assert torch.UntypedStorage(8).npu().device.type == "npu"


@pytest.mark.usefixtures("exact_conv")  # exact comparison: HF32 convolution off
def test_p2_convolution_overrideable_reaches_cpu_convolution():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1, groups=1)
    tconv = torch.nn.ConvTranspose2d(4, 2, 3, stride=2)
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    ref = tconv(conv(x)).sum()
    ref.backward()
    grads = [p.grad.clone() for p in (*conv.parameters(), *tconv.parameters())]
    conv_n, tconv_n = conv.to("npu"), tconv.to("npu")
    for p in (*conv.parameters(), *tconv.parameters()):
        p.grad = None
    xn = x.detach().npu().requires_grad_()
    out = tconv_n(conv_n(xn)).sum()
    out.backward()
    torch.testing.assert_close(out.cpu(), ref.detach())
    for g, p in zip(grads, (*conv_n.parameters(), *tconv_n.parameters())):
        torch.testing.assert_close(p.grad.cpu(), g)
    torch.testing.assert_close(xn.grad.cpu(), x.grad)


def test_p3_wrapped_numbers_keep_cpu_type_promotion():
    for dtype in (torch.int32, torch.float16, torch.bfloat16, torch.uint8):
        c = torch.arange(4).to(dtype)
        n = c.npu()
        for fn in (lambda t: t + 2, lambda t: t * 2.5, lambda t: torch.where(t > 1, t, 0),
                   lambda t: 3 - t, lambda t: torch.clamp(t, 1, 2)):
            a, b = fn(c), fn(n)
            assert a.dtype == b.dtype and torch.equal(a, b.cpu())


def test_p4_out_resize_retry_and_resize_growth():
    a = torch.randn(3, 4, device="npu")
    out = torch.empty(0, device="npu")
    torch.matmul(a, a.t(), out=out)
    torch.testing.assert_close(out.cpu(), a.cpu() @ a.cpu().t())
    vals, idx = torch.empty(0, device="npu"), torch.empty(0, dtype=torch.long, device="npu")
    torch.sort(a, dim=1, out=(vals, idx))
    assert torch.equal(vals.cpu(), a.cpu().sort(1).values)
    t = torch.arange(3.0, device="npu")
    t.resize_(2, 5)
    assert t.shape == (2, 5) and t.flatten()[:3].tolist() == [0.0, 1.0, 2.0]
    t.resize_(1)  # shrinking keeps storage
    assert t.tolist() == [0.0]


def test_p5_views_are_device_views_with_shared_version_counter():
    x = torch.zeros(2, 3, device="npu")
    v = x.view(6)
    before = x._version
    v.add_(1)
    assert x._version == v._version > before
    assert x.sum().item() == 6
    x.unsqueeze_(0)  # inplace_view op
    assert x.shape == (1, 2, 3) and x.untyped_storage().data_ptr() == v.untyped_storage().data_ptr()
    w = torch.ones(3, device="npu", requires_grad=True)
    y = w * 2
    y.view(3).mul_(2)  # autograd sees the in-place through the view
    y.sum().backward()
    assert w.grad.tolist() == [4.0, 4.0, 4.0]


def test_p6_memory_freed_while_an_exception_propagates():
    gc.collect()
    base = _memory.memory_allocated(0)

    def boom():
        t = torch.ones(10_000, device="npu")
        u = t * 2  # noqa: F841
        raise ValueError("boom")

    for _ in range(20):
        with pytest.raises(ValueError, match="boom"):
            boom()
    gc.collect()
    assert _memory.memory_allocated(0) == base


def test_p7_printing_and_grad_scaler_use_float64_internally():
    x = torch.tensor([0.1, 2e10], device="npu")
    assert "e+10" in repr(x)
    scale = torch.full((), 1024.0, device="npu")
    assert scale.double().reciprocal().item() == 1 / 1024  # 0-dim float64 allowed


def test_p8_autocast_fallthrough_for_unlisted_ops():
    x = torch.randn(3, device="npu")
    with torch.autocast("npu", dtype=torch.bfloat16):
        assert (x.abs() + x.sigmoid()).dtype == torch.float32
        assert torch.stack([x, x]).shape == (2, 3)


def test_p9_counters_and_device_state_tolerate_other_threads():
    gc.collect()
    base = _memory.memory_allocated(0)
    errors = []
    seen = []

    def worker():
        try:
            torch.npu.set_device(0)
            seen.append(torch.npu.current_device())
            w = torch.randn(32, 32, device="npu", requires_grad=True)
            for _ in range(20):
                (w @ w).tanh().sum().backward()
            del w
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gc.collect()
    assert not errors and seen == [0, 0, 0]
    assert _memory.memory_allocated(0) == base
