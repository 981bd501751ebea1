"""``ascend-compat audit``: runs a script like ``run`` and reports its ops' coverage (CPU) or its
CPU fallbacks on the simulated NPU (``--simulate``)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import sys, torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).to(device)
    x = torch.randn(32, 8, device=device)
    for step in range(3):
        out = model(x)
        loss = torch.fmax(out, torch.zeros_like(out)).mean()  # LINE-fmax
        loss.backward()
    votes = torch.mode(torch.tensor([1, 2, 2, 3], device=device)).values  # LINE-mode
    print("script ran on", device, "argv", sys.argv[1:])
    if "--fail" in sys.argv:
        raise SystemExit(3)
    """
)


def _line(marker: str) -> int:
    return next(i for i, line in enumerate(SCRIPT.splitlines(), 1) if marker in line)


def _audit(args, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_COMPAT_", "TORCH_NPU_"))}
    return subprocess.run([sys.executable, "-m", "ascend_compat", "audit", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_cpu_audit_text(tmp_path: Path):
    (tmp_path / "train.py").write_text(SCRIPT)
    proc = _audit(["train.py", "--lr", "1"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "script ran on cpu argv ['--lr', '1']"  # the script's own output first
    assert lines[1].startswith("Operator Coverage: ") and lines[1].endswith("native, 2 CPU fallback ops")
    assert "  torch_npu 2.14 op tables; recorded on cpu (forward and backward)" in lines
    assert f"  aten::fmax.out: 3 call(s), forward, first at train.py:{_line('LINE-fmax')} in <module>" in lines
    assert f"  aten::mode: 1 call(s), forward, first at train.py:{_line('LINE-mode')} in <module>" in lines
    assert any(line.startswith("    rewrite: torch.maximum") for line in lines)


def test_json_to_file_and_fail_on_fallback(tmp_path: Path):
    (tmp_path / "train.py").write_text(SCRIPT)
    proc = _audit(["--format", "json", "-o", "report.json", "--fail-on-fallback",
                   "--torch-npu-version", "2.5.1", "train.py"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == "script ran on cpu argv []\n"
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["mode"] == "cpu" and report["torch_npu_version"] == "2.5" and report["exit_code"] == 0
    status = {o["op"]: o["status"] for o in report["ops"]}
    assert status["aten::fmax.out"] == "cpu_fallback" and status["aten::gelu"] == "native"
    assert report["counts"]["cpu_fallback"] == 2
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".audit-")] == []


def test_script_failure_keeps_its_exit_code_and_still_reports(tmp_path: Path):
    (tmp_path / "train.py").write_text(SCRIPT)
    proc = _audit(["train.py", "--fail"], tmp_path)
    assert proc.returncode == 3
    assert "2 CPU fallback ops" in proc.stdout


def test_module_form(tmp_path: Path):
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text(SCRIPT)
    proc = _audit(["-m", "proj.train"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "2 CPU fallback ops" in proc.stdout


def test_simulated_npu_counts_fallbacks(tmp_path: Path):
    (tmp_path / "train.py").write_text(SCRIPT)
    proc = _audit(["--simulate", "train.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "script ran on cuda argv []"  # CUDA code ran on the simulated NPU
    from ascend_compat import data

    newest = data.native_op_versions()[-1]
    assert lines[1] == (f"ascend-compat audit (simulated NPU, torch_npu {newest}): "
                        "2 CPU fallback(s): aten::fmax.out (3 calls), aten::mode (1 call)")
    assert lines[2] == f"  aten::fmax.out: 3 call(s), first at train.py:{_line('LINE-fmax')} in <module>"


def test_bad_input(tmp_path: Path):
    proc = _audit(["missing.py"], tmp_path)
    assert proc.returncode == 3 and "can't open file 'missing.py'" in proc.stderr
    (tmp_path / "train.py").write_text(SCRIPT)
    proc = _audit(["--torch-npu-version", "1.8", "train.py"], tmp_path)
    assert proc.returncode == 2 and "older than every version" in proc.stderr
    proc = _audit(["-o", "no/such/dir/r.json", "train.py"], tmp_path)
    assert proc.returncode == 2 and "directory does not exist" in proc.stderr
    proc = _audit([], tmp_path)
    assert proc.returncode == 2 and "give a SCRIPT" in proc.stderr


def test_json_on_stdout_parses_the_script_output_goes_to_stderr(tmp_path: Path):
    """Was: the script's own output preceded the JSON report on standard output (unparseable)."""
    (tmp_path / "train.py").write_text(SCRIPT)
    for simulate in ([], ["--simulate"]):
        proc = _audit([*simulate, "--format", "json", "train.py"], tmp_path)
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
        assert report["schema"] == "ascend-compat/audit"
        assert "script ran on" in proc.stderr and "script ran on" not in proc.stdout
