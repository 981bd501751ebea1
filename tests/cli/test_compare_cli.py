"""``ascend-compat compare`` on scripts written for these tests (the public-script runs are in the report
to the lead): no vacuous pass, usage errors for names that match nothing, stopping after N steps or S
seconds, JSON that parses while the script prints, AMP with a GradScaler passing, and the whole-run
drift finding a planted precision loss at its module and line, in one command or two."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from subproc import clean_env

CNN = """import torch
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                        torch.nn.Linear(8 * 8 * 8, 10)).cuda()
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for step in range(6):
    x, y = torch.randn(4, 1, 8, 8).cuda(), torch.randint(0, 10, (4,)).cuda()
    loss = torch.nn.functional.cross_entropy(m(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    print("step", step, loss.item())
"""

AMP = """import torch
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 10)).cuda()
opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
scaler = torch.cuda.amp.GradScaler()
for step in range(2):
    x, y = torch.randn(8, 3, 16, 16).cuda(), torch.randint(0, 10, (8,)).cuda()
    with torch.autocast("cuda", dtype=torch.float16):
        loss = torch.nn.functional.cross_entropy(m(x), y)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""

PLANTED = '''import torch
torch.manual_seed(0)


class LayerNorm(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(n))
        self.bias = torch.nn.Parameter(torch.zeros(n))

    def forward(self, x):
        h = x.to(torch.bfloat16)  # PLANTED
        mu = h.mean(-1, keepdim=True)
        var = (h - mu).pow(2).mean(-1, keepdim=True)
        return ((h - mu) / (var + 1e-5).sqrt()).float() * self.weight + self.bias


class Block(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc1, self.fc2, self.norm = torch.nn.Linear(n, 4 * n), torch.nn.Linear(4 * n, n), LayerNorm(n)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))  # CALL


class Net(torch.nn.Module):
    def __init__(self, n=64):
        super().__init__()
        self.inp, self.blocks, self.out = torch.nn.Linear(16, n), torch.nn.ModuleList(Block(n) for _ in range(2)), \\
            torch.nn.Linear(n, 1)

    def forward(self, x):
        x = self.inp(x)
        for b in self.blocks:
            x = b(x)
        return self.out(x)


net = Net().cuda()
opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
data = torch.randn(32, 16)
for step in range(2):
    loss = torch.nn.functional.mse_loss(net(data.cuda()), data.sum(1, keepdim=True).cuda())
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, loss.item())
'''


def compare(tmp_path, *args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "ascend_compat", "compare", *args], capture_output=True, text=True,
                          timeout=timeout, env=clean_env(**(env or {})), cwd=str(tmp_path))


@pytest.fixture
def scripts(tmp_path):
    for name, text in (("cnn.py", CNN), ("amp.py", AMP), ("planted.py", PLANTED),
                       ("clean.py", PLANTED.replace("x.to(torch.bfloat16)  # PLANTED", "x")),
                       ("cpu_only.py", "import torch\nprint(torch.ones(3).sum())\n"),
                       ("forever.py", CNN.replace("range(6)", "iter(int, 1)"))):
        (tmp_path / name).write_text(text)
    return tmp_path


def _lines(path, mark):
    return next(n for n, text in enumerate(path.read_text().splitlines(), 1) if mark in text)


def test_nothing_compared_is_not_a_pass_and_names_that_match_nothing_are_usage_errors(scripts):
    nothing = compare(scripts, "--simulate", "cpu_only.py")
    assert nothing.returncode == 1 and "nothing was compared" in nothing.stdout and "ran no op on the NPU" in nothing.stdout
    typo = compare(scripts, "--simulate", "--ops", "aten::gleu", "cnn.py")
    assert typo.returncode == 2 and "no operator aten::gleu" in typo.stderr and "step" not in typo.stderr
    module = compare(scripts, "--simulate", "--steps", "1", "--modules", "Model.nope", "cnn.py")
    assert module.returncode == 2 and "Model.nope" in module.stderr and "Sequential.0" in module.stderr
    unused = compare(scripts, "--simulate", "--steps", "1", "--ops", "aten::gelu", "cnn.py")
    assert unused.returncode == 1 and "none of aten::gelu ran on the NPU" in unused.stdout


def test_steps_and_timeout_stop_the_script_and_json_parses(scripts):
    two = compare(scripts, "--simulate", "--steps", "2", "--format", "json", "cnn.py")
    assert two.returncode == 0, two.stderr[-2000:]
    report = json.loads(two.stdout)
    assert report["stopped"] == "stopped after 2 step(s) (--steps)" and report["passed"] is True
    assert "step 0" in two.stderr and "step 1" not in two.stderr  # stopped inside the 2nd opt.step(); prints on stderr
    assert report["compared"] + report["not_compared"]["calls"] == report["seen"]
    views = {row["op"]: row for row in report["not_compared"]["ops"]}
    assert views["aten::t"]["reason"].startswith("a view")
    rows = {(r["op"], r["by_design"]) for r in report["as_on_ascend"]}
    assert ("aten::convolution", "hf32_conv") in rows  # listed, not a departure
    timed = compare(scripts, "--simulate", "--timeout", "20", "forever.py", timeout=200)
    assert timed.returncode == 0 and "stopped after 20 s (--timeout)" in timed.stdout
    strict = compare(scripts, "--simulate", "--steps", "1", "--strict", "cnn.py")
    assert strict.returncode == 1 and "counted as departures (--strict)" in strict.stdout


def test_amp_with_a_grad_scaler_passes_and_lists_the_scalers_float64(scripts):
    proc = compare(scripts, "--simulate", "--format", "json", "amp.py")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["departures"] == []
    f64 = [r for r in report["as_on_ascend"] if r["by_design"] == "float64"]
    assert f64 and f64[0]["library"]["file"].endswith("grad_scaler.py") and f64[0]["beyond_exact"] == 0


def test_drift_finds_the_planted_bfloat16_layernorm_in_one_command(scripts):
    proc = compare(scripts, "--simulate", "--drift", "float64", "--format", "json", "planted.py", timeout=600)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    drift = json.loads(proc.stdout)["drift"]
    assert json.loads(proc.stdout)["departures"] == []  # no single op departs
    module, op = drift["first_module"], drift["first_op"]
    assert module["where"] == "Net.blocks.0.norm" and module["site"]["line"] == _lines(scripts / "planted.py", "# CALL")
    assert op["where"] == "aten::_to_copy" and op["site"]["line"] == _lines(scripts / "planted.py", "# PLANTED")
    clean = compare(scripts, "--simulate", "--drift", "float64", "clean.py", timeout=600)
    assert clean.returncode == 0 and "no module drifts beyond the standard" in clean.stdout


def test_drift_in_two_commands_with_a_recorded_reference(scripts):
    ref = scripts / "ref.json"
    rec = compare(scripts, "--simulate", "--record", str(ref), "--precision", "float64", "planted.py",
                  env={"ASCEND_COMPAT_SIM_NUMERICS": "exact", "ASCEND_COMPAT_SIM_FLOAT64": "allow"})
    assert rec.returncode == 0 and "recorded 2 step(s)" in rec.stdout
    data = json.loads(ref.read_text())
    assert data["schema"] == "ascend-compat/run-record" and data["schema_version"] == "1.0"
    assert data["run"]["precision"] == "float64" and len(data["steps"]) == 2 and data["steps"][0]["ops"]
    proc = compare(scripts, "--simulate", "--against", str(ref), "planted.py")
    assert proc.returncode == 1 and "first module drifting beyond the standard" in proc.stdout
    assert f"planted.py:{_lines(scripts / 'planted.py', '# PLANTED')}: aten::_to_copy" in proc.stdout
    (scripts / "old.json").write_text(json.dumps({**data, "schema_version": 99}))
    old = compare(scripts, "--simulate", "--against", "old.json", "planted.py")
    assert old.returncode == 3 and "version 99 run record" in old.stderr
    assert compare(scripts, "--simulate", "--against", "missing.json", "planted.py").returncode == 3
    assert compare(scripts, "--drift", "float64", "planted.py").returncode == 2  # needs --simulate
