"""The stand-in's torch_npu submodules (profiler, optim, utils, version, contrib, npu.amp), used the way public
Ascend code uses them (vllm-ascend's profiler set-up, MindSpeed's FlopsCounter, fused optimizers)."""
from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F


@pytest.fixture(autouse=True)
def _installed(sim):
    return sim


def test_profiler_as_vllm_ascend_configures_it(tmp_path):
    import torch_npu

    cfg = torch_npu.profiler._ExperimentalConfig(
        export_type=torch_npu.profiler.ExportType.Text, profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
        msprof_tx=False, aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization, l2_cache=False, op_attr=False,
        data_simplification=True, record_op_args=False, gc_detect_threshold=None)
    x = torch.randn(8, 8, device="npu")
    with torch_npu.profiler.profile(
            activities=[torch_npu.profiler.ProfilerActivity.CPU, torch_npu.profiler.ProfilerActivity.NPU],
            schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=1, repeat=1, skip_first=0),
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(str(tmp_path), worker_name="w0"),
            record_shapes=True, with_stack=False, experimental_config=cfg) as prof:
        for _ in range(2):
            (x @ x).sum()
            prof.step()
    traces = list(tmp_path.glob("w0*.pt.trace.json"))
    assert len(traces) == 1
    names = {e.get("name") for e in json.loads(traces[0].read_text())["traceEvents"]}
    assert "aten::mm" in names
    assert torch_npu.profiler.ProfilerActivity.NPU in torch_npu.profiler.supported_activities()
    with pytest.raises(ValueError, match=r"profiler_level[\s\S]*ERR04001 PROF invalid parameter"):
        torch_npu.profiler._ExperimentalConfig(profiler_level="Level9")


def test_dynamic_profile_accepts_its_calls():
    from torch_npu.profiler import dynamic_profile as dp

    dp.init("/tmp/does-not-matter")
    dp.step()
    with pytest.raises(TypeError):
        dp.init(3)


def _train(opt_cls, params, steps=3, **kw):
    opt = opt_cls(params, **kw)
    for i in range(steps):
        opt.zero_grad()
        loss = sum(((p - i) ** 2).sum() for p in params)
        loss.backward()
        opt.step()
    return opt


@pytest.mark.parametrize("name,ref,kw", [("NpuFusedAdamW", torch.optim.AdamW, dict(lr=0.1, weight_decay=0.1)),
                                         ("NpuFusedAdam", torch.optim.Adam, dict(lr=0.1)),
                                         ("NpuFusedSGD", torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
                                         ("NpuFusedRMSprop", torch.optim.RMSprop, dict(lr=0.01)),
                                         ("NpuFusedAdadelta", torch.optim.Adadelta, dict(lr=1.0))])
def test_fused_optimizers_match_torch_optim(name, ref, kw):
    import torch_npu

    start = torch.randn(4, 3)
    npu_p = torch.nn.Parameter(start.to("npu"))
    cpu_p = torch.nn.Parameter(start.clone())
    opt = _train(getattr(torch_npu.optim, name), [npu_p], **kw)
    _train(ref, [cpu_p], **kw)
    torch.testing.assert_close(npu_p.detach().cpu(), cpu_p.detach(), atol=1e-5, rtol=1e-5)
    assert isinstance(opt, torch_npu.optim.NpuFusedOptimizerBase)


def test_clip_grad_norm_fused_and_rmsprop_tf():
    import torch_npu

    p = torch.nn.Parameter(torch.ones(4, device="npu"))
    opt = torch_npu.optim.NpuFusedRMSpropTF([p], lr=0.1, alpha=0.9, eps=1e-10)
    p.grad = torch.full((4,), 3.0, device="npu")
    norm = opt.clip_grad_norm_fused_(1.0)
    assert float(norm) == pytest.approx(6.0)
    g = 3.0 / 6.0
    torch.testing.assert_close(p.grad.cpu(), torch.full((4,), g), atol=1e-5, rtol=1e-5)
    opt.step()
    v = 0.9 * 1.0 + 0.1 * g * g  # TensorFlow's square average starts at 1
    torch.testing.assert_close(p.detach().cpu(), torch.full((4,), 1.0 - 0.1 * g / (v + 1e-10) ** 0.5))
    with pytest.raises(NotImplementedError, match="NpuFusedLamb is not simulated"):
        torch_npu.optim.NpuFusedLamb([p])


def test_utils_combine_tensors_flops_counter_and_versions(tmp_path):
    import torch_npu
    from torch_npu.utils.collect_env import get_cann_version

    a, b = torch.randn(2, 3, device="npu"), torch.randn(4, device="npu")
    values = [a.cpu().clone(), b.cpu().clone()]
    combined = torch_npu.utils.npu_combine_tensors([a, b])
    assert combined.numel() == 10 and torch_npu.utils.is_combined_tensor_valid(combined, [a, b])
    torch.testing.assert_close(a.cpu(), values[0])
    combined.zero_()
    assert float(a.abs().sum() + b.abs().sum()) == 0  # the tensors are views of the buffer
    assert torch_npu.utils.get_part_combined_tensor(combined, 6, 4).numel() == 4

    counter = torch_npu.utils.FlopsCounter()
    x, w = torch.randn(4, 8, device="npu"), torch.randn(8, 16, device="npu")
    counter.start()
    x @ w
    counter.pause()
    x @ w
    counter.resume()
    recorded, traversed = counter.get_flops()
    counter.stop()
    assert (recorded, traversed) == (2 * 4 * 8 * 16, 2 * 2 * 4 * 8 * 16)
    with pytest.warns(FutureWarning):
        from torch_npu.utils.flops_count import FlopsCounter
        FlopsCounter()

    assert get_cann_version() == torch_npu.utils.get_cann_version() == torch.npu.utils.get_cann_version()
    from torch_npu.version import __version__, git_version

    assert __version__ == torch_npu.__version__ and isinstance(git_version, str)
    path = tmp_path / "x.pt"
    torch_npu.utils.save_async({"w": w}, str(path))
    torch.testing.assert_close(torch.load(str(path))["w"].cpu(), w.cpu())
    torch_npu.utils.set_thread_affinity([0])
    torch_npu.utils.reset_thread_affinity()
    from torch_npu.utils import register_asd_hook

    assert register_asd_hook(x, w) is None


def test_npu_amp_autocast_and_grad_scaler_train_a_step():
    import torch_npu

    model = torch.nn.Linear(8, 4).to("npu")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch_npu.npu.amp.GradScaler(init_scale=1024.0)
    x = torch.randn(3, 8, device="npu")
    before = model.weight.detach().cpu().clone()
    with torch_npu.npu.amp.autocast():
        y = model(x)
    assert y.dtype == torch.float16
    scaler.scale(y.float().pow(2).mean()).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 1024.0
    assert not torch.equal(model.weight.detach().cpu(), before)


def test_contrib_helpers():
    from torch_npu.contrib import function, matmul_transpose
    from torch_npu.contrib.module import FastBatchNorm2d, LabelSmoothingCrossEntropy, Mish, NpuDropPath

    a, b = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    torch.testing.assert_close(matmul_transpose(a.npu(), b.npu()).cpu(), a @ b.transpose(-1, -2),
                               atol=1e-5, rtol=1e-5)
    x = torch.zeros(4, device="npu")
    function.npu_fast_condition_index_put(x, x == 0, 2.0)
    assert x.cpu().tolist() == [2.0] * 4
    pred, target = torch.randn(6, 5), torch.randint(0, 5, (6,))
    loss = LabelSmoothingCrossEntropy(num_classes=5, smooth_factor=0.1)(pred.npu(), target.npu())
    torch.testing.assert_close(loss.cpu(), F.cross_entropy(pred, target, label_smoothing=0.125))
    torch.testing.assert_close(Mish()(a.npu()).cpu(), F.mish(a))
    assert torch.equal(NpuDropPath(0.5).eval()(a.npu()).cpu(), a)
    assert isinstance(FastBatchNorm2d(3), torch.nn.BatchNorm2d)
    import torch_npu

    with pytest.raises(AttributeError, match="ROIAlign is not simulated"):
        torch_npu.contrib.ROIAlign  # noqa: B018


def test_profiler_trace_id_follows_the_callback_rules(tmp_path, capsys):
    import json

    import torch_npu

    def run(callback):
        with torch_npu.profiler.profile(
                on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(str(tmp_path / "t"), worker_name="w"),
                custom_trace_id_callback=callback) as prof:
            torch.ones(2, device="npu").add_(1)
        return prof.trace_id

    assert run(lambda: "run-42") == "run-42"
    traces = list((tmp_path / "t").glob("w.*.pt.trace.json"))
    assert len(traces) == 1 and json.loads(traces[0].read_text())["trace_id"] == "run-42"
    default = run(None)
    assert len(default) == 32 and int(default, 16) >= 0 and capsys.readouterr().out == ""
    for bad, why in ((lambda: 7, "should return str"), ("nope", "is not callable"),
                     (lambda: "x" * 1025, "should return str"), (lambda: 1 / 0, "raised an exception")):
        assert len(run(bad)) == 32
        assert "[WARNING] " in (out := capsys.readouterr().out) and why in out
