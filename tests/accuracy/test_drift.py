"""Run records, the float64 golden run and the drift comparison, in-process on the CPU (no NPU needed:
the recorder and the golden run work on any device)."""
from __future__ import annotations

import contextlib
import json
import math

import pytest
import torch

from ascend_compat.accuracy import runrecord
from ascend_compat.accuracy.drift import compare_runs, limit
from ascend_compat.accuracy.golden_run import Float64Mode
from ascend_compat.accuracy.recorder import RunRecorder


def test_sketches_estimate_the_relative_rms_error():
    torch.manual_seed(0)
    x = torch.randn(100_000)
    for rel in (1e-6, 1e-3):
        noisy = x + torch.randn(100_000) * x.pow(2).mean().sqrt() * rel
        est = runrecord.relative_error(runrecord.stats(noisy), runrecord.stats(x))
        assert rel / 3 < est < rel * 3
    assert runrecord.relative_error(runrecord.stats(x), runrecord.stats(x)) == 0.0
    assert runrecord.relative_error(runrecord.stats(x[:10]), runrecord.stats(x)) == math.inf
    bad = x.clone()
    bad[0] = math.nan
    assert runrecord.relative_error(runrecord.stats(bad), runrecord.stats(x)) == math.inf
    s = runrecord.stats(torch.ones(3, dtype=torch.bfloat16))
    assert s["dtype"] == "bfloat16" and s["n"] == 3 and s["rms"] == 1.0


class _Net(torch.nn.Module):
    def __init__(self, cast=None):
        super().__init__()
        self.a, self.b, self.c = torch.nn.Linear(8, 32), torch.nn.LayerNorm(32), torch.nn.Linear(32, 1)
        self.cast = cast

    def forward(self, x):
        h = self.a(x)
        if self.cast is not None:
            h = h.to(self.cast).float()  # LOSSY
        return self.c(self.b(h))


def _run(cast=None, golden=False, steps=3, max_steps=None):
    torch.manual_seed(0)
    net = _Net(cast)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(16, 8)
    rec = RunRecorder({"precision": "float64" if golden else "as run"}, max_steps=max_steps)
    with rec, (Float64Mode() if golden else contextlib.nullcontext()):
        for _ in range(steps):
            loss = net(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return rec.record.to_dict(), net


def test_the_golden_run_computes_in_float64_from_the_same_parameters():
    mine, net = _run()
    golden, gnet = _run(golden=True)
    assert gnet.a.weight.dtype == torch.float32  # parameters keep their dtype (and their initial values)
    assert [len(s["losses"]) for s in golden["steps"]] == [1, 1, 1]
    a, b = mine["steps"][0]["losses"][0], golden["steps"][0]["losses"][0]
    assert a != b and abs(a - b) / b < 1e-5
    out = golden["steps"][0]["modules"][-1]
    assert out["module"] == "_Net" and out["output"]["dtype"] == "float64"


def test_a_clean_float32_run_does_not_drift_and_a_lossy_cast_does_at_its_module_and_op():
    golden, _ = _run(golden=True)
    clean = compare_runs(_run()[0], golden)
    assert not clean.drifts and clean.modules_compared == 12 and clean.worst_grad.error < limit("float32")
    lossy = compare_runs(_run(cast=torch.bfloat16)[0], _run(cast=torch.bfloat16, golden=True)[0])
    assert lossy.drifts and lossy.first_module.where == "_Net" and lossy.first_module.step == 0
    assert lossy.first_op.where == "aten::_to_copy" and lossy.first_op.dtype == "bfloat16"
    assert "LOSSY" in open(lossy.first_op.site[0]).read().splitlines()[lossy.first_op.site[1] - 1]
    assert json.loads(json.dumps(lossy.to_dict()))["first_module"]["where"] == "_Net"
    assert "first module drifting beyond the standard" in lossy.text()


def test_records_are_bounded_versioned_and_written_atomically(tmp_path):
    data, _ = _run(steps=5, max_steps=2)
    assert len(data["steps"]) == 2 and data["truncated"]["steps"] == 3  # steps 3 to 5 counted, not kept
    assert data["steps"][0]["ops"] and not data["steps"][1]["ops"]  # op values for the first step only
    rec = runrecord.RunRecord({"precision": "as run"})
    rec.add_loss(1.5)
    path = tmp_path / "run.json"
    rec.save(str(path))
    assert runrecord.load(str(path))["steps"][0]["losses"] == [1.5]
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary file left
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(runrecord.RecordError, match="not a run record"):
        runrecord.load(str(tmp_path / "bad.json"))
    with pytest.raises(runrecord.RecordError, match="cannot read"):
        runrecord.load(str(tmp_path / "missing.json"))
    saved = json.loads(path.read_text())
    assert (saved["schema"], saved["schema_version"]) == ("ascend-compat/run-record", "1.0")
    for version, readable in (("1.7", True), ("2.0", False), (1, False)):  # a minor version only adds fields
        (tmp_path / "v.json").write_text(json.dumps(dict(saved, schema_version=version)))
        if readable:
            assert runrecord.load(str(tmp_path / "v.json"))["steps"]
        else:
            with pytest.raises(runrecord.RecordError, match="record the reference again"):
                runrecord.load(str(tmp_path / "v.json"))


def test_the_limit_widens_to_what_the_run_computes_in_by_design():
    from ascend_compat.accuracy.drift import module_limit

    f32 = {"module": "M.ln", "output": {"dtype": "float32"}}
    assert module_limit(f32) == limit("float32")
    assert module_limit({**f32, "autocast": "bfloat16"}) == limit("bfloat16")  # AMP
    hf32 = {**f32, "hf32": ["matmul"]}
    assert module_limit(hf32, {"M.ln.proj": {"matmul"}}) == limit("float16")  # a matmul runs inside it in HF32
    assert module_limit(hf32, {"M.fc": {"matmul"}}) == limit("float32")  # not inside: no matmul of its own
    assert module_limit({**f32, "hf32": ["conv"]}, {"M.ln": {"matmul"}}) == limit("float32")  # other switch
    assert module_limit(hf32, None) == limit("float16")  # no op records: any float32 module may
