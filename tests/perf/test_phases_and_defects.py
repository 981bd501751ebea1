"""``ascend-compat profile`` on scripts shaped like public trainers (evaluation with sampling,
checkpoints, set-up around the steps; GradScaler; a script that never reaches the device): only the
training steps are judged by default, each finding names its phase, severities do not depend on the
window, and the JSON report parses on its own."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent / "scripts"
MARK = re.compile(r"\b(PLANT|EVAL|CKPT|SETUP) ([a-z0-9-]+)")
PHASE = {"PLANT": "train", "EVAL": "eval", "CKPT": "checkpoint", "SETUP": "setup"}


def marked(script: str) -> set:
    """``{(phase, rule, line)}`` from the markers written in the script before the tool ran."""
    out = set()
    for number, text in enumerate((SCRIPTS / script).read_text().splitlines(), 1):
        if "#" in text:
            for kind, rule in MARK.findall(text.split("#", 1)[1]):
                out.add((PHASE[kind], rule, number))
    return out


def profile(*args: str) -> subprocess.CompletedProcess:
    from subproc import clean_env

    return subprocess.run([sys.executable, "-m", "ascend_compat", "profile", "--simulate", "--format", "json", *args],
                          cwd=str(SCRIPTS), capture_output=True, text=True, timeout=600, env=clean_env())


def findings(proc: subprocess.CompletedProcess, script: str) -> set:
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)  # standard output is the report alone
    return {(f["phase"], f["rule"], f["site"]["line"]) for f in report["findings"]
            if f["site"] and Path(f["site"]["file"]).name == script}


def test_only_training_steps_are_judged_by_default_and_the_rest_is_counted():
    proc = profile("phases.py")
    train = {m for m in marked("phases.py") if m[0] == "train"}
    assert findings(proc, "phases.py") == train
    report = json.loads(proc.stdout)
    assert report["phases"] == ["train"] and set(report["ops_by_phase"]) == {"train", "eval", "checkpoint", "setup"}
    assert any("left out (not training steps)" in note and "evaluation" in note and "checkpointing" in note
               for note in report["notes"])
    assert re.findall(r"^iter (\d)", proc.stderr, re.M) == ["0", "1", "2"]  # the script's output, on stderr


def test_every_phase_with_phases_all():
    got = findings(profile("--phases", "all", "phases.py"), "phases.py")
    assert marked("phases.py") <= got
    # the training step's findings are the same as when training is judged alone
    assert {m for m in got if m[0] == "train"} == {m for m in marked("phases.py") if m[0] == "train"}


def test_severity_and_findings_do_not_depend_on_the_window():
    windows = [("--warmup", "1", "--steps", "3"), ("--warmup", "2", "--steps", "2"), ("--warmup", "0", "--steps", "5"),
               ("--warmup", "3", "--run-to-end")]
    seen = []
    for window in windows:
        proc = profile(*window, "phases.py")
        assert proc.returncode == 0, proc.stderr[-3000:]
        seen.append({(f["rule"], f["site"]["line"], f["severity"]) for f in json.loads(proc.stdout)["findings"]})
    assert all(s == seen[0] for s in seen), seen


def test_gradscaler_sync_is_named_as_gradscaler_with_the_fused_optimizer_fix():
    proc = profile("amp_scaler.py")
    assert findings(proc, "amp_scaler.py") == {m for m in marked("amp_scaler.py")}
    (finding,) = [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "device-sync"]
    assert finding["title"].startswith("GradScaler.step reads the optimizer's inf/NaN flag")
    assert "fused=True" in finding["fix"] and "detach" not in finding["fix"]


def test_a_script_that_never_reaches_the_device_says_so():
    proc = profile("no_npu.py")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["no_npu_op"] is True and report["findings"] == []
    text = subprocess.run([sys.executable, "-m", "ascend_compat", "profile", "--simulate", "no_npu.py"],
                          cwd=str(SCRIPTS), capture_output=True, text=True, timeout=600).stdout
    assert "no NPU op ran" in text and "<no user frame>" not in text


def test_timeout_stops_the_script_and_reports_what_ran(tmp_path):
    script = tmp_path / "forever.py"
    script.write_text("import time, torch\n"
                      "w = torch.randn(8, 8, device='cuda', requires_grad=True)\n"
                      "opt = torch.optim.SGD([w], lr=0.1)\n"
                      "while True:\n"
                      "    (w @ w).sum().backward()\n"
                      "    opt.step()\n"
                      "    time.sleep(0.01)\n")
    from subproc import clean_env

    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "profile", "--simulate", "--run-to-end",
                           "--timeout", "4", "--format", "json", str(script)], capture_output=True, text=True,
                          timeout=600, env=clean_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["stopped"] == "the script was stopped after 4 s (--timeout)"
    assert len(report["steps"]) > 1 and report["ops_per_step"] > 0


@pytest.mark.parametrize("args,message", [(("--phases", "training"), "give phases from"),
                                          (("--timeout", "0"), "above 0")])
def test_bad_phase_or_timeout_is_a_usage_error(args, message):
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "profile", *args, "phases.py"], cwd=str(SCRIPTS),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_a_hand_written_update_loop_is_found():
    """The per-parameter loop of tutorials (``p.data.add_(p.grad, alpha=-lr)``) is one kernel per parameter;
    gradient clipping (an in-place update of the gradients themselves) is not such a loop."""
    proc = profile("manual_sgd.py")
    assert findings(proc, "manual_sgd.py") == marked("manual_sgd.py")
    finding = next(f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "manual-update")
    assert finding["weight"]["ops_per_step"] == 4 * 5  # 4 parameters, 5 iterations in the one step
    assert "foreach=True" in finding["fix"]
