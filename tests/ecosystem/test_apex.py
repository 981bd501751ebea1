"""apex drop-in: amp opt levels and loss scaling, fused optimizers vs hand-written updates, parallel and
normalization layers, and an apex-era training script under ``ascend-compat run --simulate``."""
from __future__ import annotations

import socket
import subprocess
import sys

import pytest
import torch

from _dropin_subproc import REPO, SCRIPTS, env, result

from ascend_compat import simulator

if not simulator.is_installed():
    simulator.install()

from ascend_compat.ecosystem.dropins.apex import amp, normalization, optimizers, parallel  # noqa: E402


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                               torch.nn.Linear(8, 3)).to("npu")


def _batch():
    g = torch.Generator().manual_seed(1)
    return torch.randn(16, 6, generator=g).to("npu"), torch.randint(0, 3, (16,), generator=g).to("npu")


# ----------------------------------------------------------------------------- amp
def test_o1_autocasts_forward_and_unscales_gradients():
    model = _model()
    reference = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = amp.initialize(model, opt, opt_level="O1", verbosity=0)
    x, y = _batch()
    out = model(x)
    assert out.dtype == torch.float16 and next(model.parameters()).dtype == torch.float32
    loss = torch.nn.functional.cross_entropy(out.float(), y)
    with amp.scale_loss(loss, opt) as scaled:
        assert scaled.item() == pytest.approx(loss.item() * 2.0 ** 16, rel=1e-6)
        scaled.backward()
    ref_loss = torch.nn.functional.cross_entropy(reference(x), y)
    ref_loss.backward()
    for p, r in zip(model.parameters(), reference.parameters()):
        assert p.grad.dtype == torch.float32
        torch.testing.assert_close(p.grad.cpu(), r.grad.cpu(), atol=5e-3, rtol=2e-2)  # fp16 forward vs fp32


def test_dynamic_scaler_skips_step_on_overflow_and_grows_after_window():
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = amp.initialize(model, opt, opt_level="O1", verbosity=0)
    before = [p.detach().cpu().clone() for p in model.parameters()]
    x, y = _batch()
    loss = torch.nn.functional.cross_entropy(model(x).float(), y)
    with amp.scale_loss(loss * float("inf"), opt) as scaled:
        scaled.backward()
    opt.step()  # skipped
    assert all(torch.equal(b, p.detach().cpu()) for b, p in zip(before, model.parameters()))
    assert amp.state_dict() == {"loss_scaler0": {"loss_scale": 2.0 ** 15, "unskipped": 0}}
    scaler = amp._state.scalers[0]
    scaler.unskipped = scaler.window - 1
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x).float(), y)
    with amp.scale_loss(loss, opt) as scaled:
        scaled.backward()
    opt.step()  # taken
    assert not all(torch.equal(b, p.detach().cpu()) for b, p in zip(before, model.parameters()))
    assert amp.state_dict()["loss_scaler0"] == {"loss_scale": 2.0 ** 16, "unskipped": 0}
    amp.load_state_dict({"loss_scaler0": {"loss_scale": 128.0, "unskipped": 3}})
    assert amp.state_dict()["loss_scaler0"] == {"loss_scale": 128.0, "unskipped": 3}


def test_gradient_accumulation_across_scale_loss_calls():
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = amp.initialize(model, opt, opt_level="O0", loss_scale=1024.0, verbosity=0)
    x, y = _batch()
    for xb, yb in ((x[:8], y[:8]), (x[8:], y[8:])):
        with amp.scale_loss(torch.nn.functional.cross_entropy(model(xb), yb), opt) as scaled:
            scaled.backward()
    accumulated = [p.grad.cpu().clone() for p in model.parameters()]
    opt.zero_grad()
    for xb, yb in ((x[:8], y[:8]), (x[8:], y[8:])):
        torch.nn.functional.cross_entropy(model(xb), yb).backward()
    for a, p in zip(accumulated, model.parameters()):
        torch.testing.assert_close(a, p.grad.cpu(), atol=1e-6, rtol=1e-5)


def test_o2_half_model_fp32_batchnorm_and_master_weights():
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    model, opt = amp.initialize(model, opt, opt_level="O2", verbosity=0)
    assert model[0].weight.dtype == torch.float16 and model[1].weight.dtype == torch.float32
    masters = list(amp.master_params(opt))
    assert all(p.dtype == torch.float32 for p in masters)
    assert masters[0] is not model[0].weight and masters[2] is model[1].weight  # BN params are their own master
    x, y = _batch()
    out = model(x)  # float32 input cast to half inside; output cast back to float32
    assert out.dtype == torch.float32
    with amp.scale_loss(torch.nn.functional.cross_entropy(out, y), opt) as scaled:
        scaled.backward()
    assert masters[0].grad is not None and masters[0].grad.dtype == torch.float32 and model[0].weight.grad is None
    expected = masters[0].detach().cpu() - 0.5 * masters[0].grad.cpu()
    opt.step()
    torch.testing.assert_close(masters[0].detach().cpu(), expected)
    torch.testing.assert_close(model[0].weight.detach().cpu(), expected.half())  # copied back to the model


def test_o3_and_bad_opt_level():
    model = _model()
    model = amp.initialize(model, opt_level="O3", verbosity=0)
    assert model[1].weight.dtype == torch.float16
    with pytest.raises(RuntimeError, match="Unexpected optimization level O4"):
        amp.initialize(_model(), opt_level="O4")


# ----------------------------------------------------------------------------- optimizers
def _params(seed=0, shapes=((4, 3), (5,))):
    g = torch.Generator().manual_seed(seed)
    ps = [torch.randn(*s, generator=g).to("npu").requires_grad_(True) for s in shapes]
    for p in ps:
        p.grad = torch.randn(p.shape, generator=g).to("npu")
    return ps


@pytest.mark.parametrize("adam_w_mode,torch_cls", [(True, torch.optim.AdamW), (False, torch.optim.Adam)])
def test_fused_adam_matches_torch(adam_w_mode, torch_cls):
    a, b = _params(), _params()
    fused = optimizers.FusedAdam(a, lr=1e-2, weight_decay=0.1, adam_w_mode=adam_w_mode)
    ref = torch_cls(b, lr=1e-2, weight_decay=0.1)
    for step in range(3):
        fused.step()
        ref.step()
    for x, y in zip(a, b):
        torch.testing.assert_close(x.detach().cpu(), y.detach().cpu(), atol=1e-6, rtol=1e-5)
    with pytest.raises(RuntimeError, match="AMSGrad"):
        optimizers.FusedAdam(a, amsgrad=True)


def test_fused_adam_without_bias_correction():
    (p,) = _params(shapes=((6,),))
    w0, g = p.detach().cpu().clone(), p.grad.cpu().clone()
    optimizers.FusedAdam([p], lr=0.1, bias_correction=False, betas=(0.9, 0.99), eps=1e-8).step()
    m, v = 0.1 * g, 0.01 * g * g
    torch.testing.assert_close(p.detach().cpu(), w0 - 0.1 * m / (v.sqrt() + 1e-8))


def _lamb_reference(params, grads, steps, lr, b1, b2, eps, wd, max_norm):
    """Hand-written LAMB (apex FusedLAMB defaults: adam_w_mode, grad_averaging, bias correction)."""
    ws = [p.clone().double() for p in params]
    ms = [torch.zeros_like(w) for w in ws]
    vs = [torch.zeros_like(w) for w in ws]
    for t in range(1, steps + 1):
        gs = [g.double() for g in grads]
        norm = torch.sqrt(sum((g * g).sum() for g in gs))
        if norm > max_norm:
            gs = [g / (norm / max_norm) for g in gs]
        for i, (w, g) in enumerate(zip(ws, gs)):
            ms[i] = b1 * ms[i] + (1 - b1) * g
            vs[i] = b2 * vs[i] + (1 - b2) * g * g
            u = (ms[i] / (1 - b1 ** t)) / ((vs[i] / (1 - b2 ** t)).sqrt() + eps) + wd * w
            wn, un = w.norm(), u.norm()
            ratio = wn / un if (wn > 0 and un > 0) else 1.0
            ws[i] = w - lr * ratio * u
    return ws


@pytest.mark.parametrize("max_norm", [1.0, 100.0])
def test_fused_lamb_matches_hand_written_lamb(max_norm):
    params = _params(seed=3, shapes=((8, 4), (4,), (3, 3)))
    grads = [p.grad.cpu().clone() for p in params]
    start = [p.detach().cpu().clone() for p in params]
    opt = optimizers.FusedLAMB(params, lr=0.05, weight_decay=0.01, max_grad_norm=max_norm)
    for _ in range(3):
        opt.step()  # the same gradients each step
    expected = _lamb_reference(start, grads, 3, 0.05, 0.9, 0.999, 1e-6, 0.01, max_norm)
    for p, e in zip(params, expected):
        torch.testing.assert_close(p.detach().cpu().double(), e, atol=1e-5, rtol=1e-5)


def test_fused_sgd_and_zero_grad_semantics():
    a, b = _params(), _params()
    optimizers.FusedSGD(a, lr=0.1, momentum=0.9, weight_decay=0.01).step()
    torch.optim.SGD(b, lr=0.1, momentum=0.9, weight_decay=0.01).step()
    for x, y in zip(a, b):
        torch.testing.assert_close(x.detach().cpu(), y.detach().cpu())
    opt = optimizers.FusedSGD(a, lr=0.1)  # apex default set_grad_none=False: zeros
    opt.zero_grad()
    assert a[0].grad is not None and not a[0].grad.cpu().any()
    optimizers.FusedAdam(a).zero_grad()  # set_grad_none=True
    assert a[0].grad is None
    with pytest.raises(NotImplementedError, match="wd_after_momentum"):
        optimizers.FusedSGD(a, lr=0.1, wd_after_momentum=True)


# ----------------------------------------------------------------------------- normalization / parallel
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
def test_fused_rms_norm_on_npu(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 16, generator=g)
    norm = normalization.FusedRMSNorm(16, eps=1e-5).to("npu")
    with torch.no_grad():
        norm.weight.copy_(torch.rand(16, generator=g) + 0.5)
    y = norm(x.to(dtype).to("npu"))
    x64 = x.to(dtype).double()
    ref = x64 / torch.sqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-5) * norm.weight.detach().cpu().double()
    assert y.dtype == dtype
    tol = {torch.float16: 2e-3, torch.bfloat16: 2e-2, torch.float32: 1e-5}[dtype]
    torch.testing.assert_close(y.cpu().double(), ref, atol=tol * 4, rtol=tol)
    y.float().sum().backward()
    assert norm.weight.grad is not None


def test_fused_layer_norm_is_layer_norm():
    ln = normalization.FusedLayerNorm(8).to("npu")
    x = torch.randn(2, 8).to("npu")
    torch.testing.assert_close(ln(x).cpu(), torch.nn.functional.layer_norm(x.cpu(), (8,)), atol=1e-6, rtol=1e-5)


def test_syncbn_single_process_and_convert():
    model = torch.nn.Sequential(torch.nn.Conv1d(2, 4, 1), torch.nn.BatchNorm1d(4))
    converted = parallel.convert_syncbn_model(model)
    assert isinstance(converted[1], torch.nn.SyncBatchNorm)
    bn = parallel.SyncBatchNorm(4).to("npu").eval()
    assert bn(torch.randn(3, 4, 5).to("npu")).shape == (3, 4, 5)
    with pytest.raises(NotImplementedError, match="channel_last"):
        parallel.SyncBatchNorm(4, channel_last=True)


# ----------------------------------------------------------------------------- apex-era script
def _run_script(*args, nproc=1, timeout=600):
    launcher = [sys.executable, "-m", "ascend_compat", "run", "--simulate", str(SCRIPTS / "with_dropins.py"),
                str(SCRIPTS / "apex_era_train.py"), *args]
    if nproc > 1:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        launcher = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}",
                    f"--master_port={port}"] + launcher[1:]
    return subprocess.run(launcher, capture_output=True, text=True, timeout=timeout, env=env(), cwd=str(REPO))


@pytest.mark.parametrize("opt_level,optimizer,param_dtype", [("O1", "adam", "torch.float32"),
                                                             ("O2", "lamb", "torch.float16")])
def test_apex_era_script_trains(tmp_path, opt_level, optimizer, param_dtype):
    r = result(_run_script("--opt-level", opt_level, "--optimizer", optimizer, "--checkpoint",
                           str(tmp_path / "ckpt.pt")))
    assert r["device"] == "npu:0" and r["param_dtype"] == param_dtype
    assert float(r["last"]) < float(r["first"]) * 0.8  # it trained
    assert (tmp_path / "ckpt.pt").exists()


@pytest.mark.slow
def test_apex_era_script_two_processes_ddp():
    r = result(_run_script("--opt-level", "O2", "--sync-bn", "0", nproc=2))
    assert r["world"] == "2" and r["wrapper"] == "DistributedDataParallel"
    assert float(r["last"]) < float(r["first"])


@pytest.mark.slow
def test_apex_era_script_two_processes_syncbn():
    proc = _run_script("--opt-level", "O1", nproc=2)
    r = result(proc)
    assert r["world"] == "2" and float(r["last"]) < float(r["first"])
