"""Regression tests for measured defects of the command line (each names what used to happen)."""
from __future__ import annotations

import codecs
import json
import os
import re
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from test_exit_codes import cli

ROOT = Path(__file__).resolve().parents[2]


def _py(code: str, env_extra=None, timeout=300):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_COMPAT_")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------------------------ install
def test_base_install_has_what_the_documented_commands_need():
    """Was: `migrate` failed with 'libcst is not installed' and torch printed 'Failed to initialize
    NumPy' on every simulated run, because the base install lacked them."""
    import sys as _sys

    if _sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=;\[ ]", d, maxsplit=1)[0].lower() for d in deps}
    assert {"torch", "numpy", "libcst", "rich", "platformdirs"} <= names
    constraints = (ROOT / "constraints.txt").read_text()
    for name in ("numpy", "libcst", "rich", "platformdirs"):
        assert re.search(rf"^{name}==", constraints, re.M), name


def test_simulated_run_has_no_numpy_warning(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import torch\nprint(torch.ones(2, device='cuda').sum().item())\n")
    proc = cli(["run", "--simulate", str(script)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "2.0" in proc.stdout
    assert "NumPy" not in proc.stderr


def test_import_stays_light():
    code = ("import sys, ascend_compat, ascend_compat.cli as c; c.build_parser(); "
            "print(sorted(m for m in ('rich', 'libcst', 'platformdirs', 'jsonschema', 'torch') if m in sys.modules))")
    proc = _py(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# ------------------------------------------------------------------------------ run / audit / error
def test_run_without_npu_hints_at_simulate(tmp_path):
    """Was: torch's 'Torch not compiled with CUDA enabled' and no word about --simulate."""
    script = tmp_path / "train.py"
    script.write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    proc = cli(["run", str(script)], tmp_path)
    assert proc.returncode == 1
    # torch's own CUDA error, which depends on the torch build (a CPU build, or a CUDA build without a driver)
    assert re.search(r"Torch not compiled with CUDA enabled|Found no NVIDIA driver", proc.stderr)
    assert f"ascend-compat run --simulate {script}" in proc.stderr


@pytest.mark.parametrize("command", ["audit", "profile", "compare"])
def test_no_npu_note_names_the_command_that_ran(tmp_path, command):
    """Was: audit, profile and compare suggested `ascend-compat run --simulate SCRIPT`."""
    (tmp_path / "train.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    proc = cli([command, "train.py"], tmp_path)
    assert proc.returncode == 1
    assert f"to dry-run it on the simulated NPU: ascend-compat {command} --simulate train.py" in proc.stderr


def test_audit_of_a_script_that_crashed_before_any_op(tmp_path):
    """Was: 'Operator Coverage: 100.0% native' (exit 1, but the headline read like a pass)."""
    script = tmp_path / "crash.py"
    script.write_text("import torch\nraise RuntimeError('data file missing')\n")
    proc = cli(["audit", str(script)], tmp_path)
    assert proc.returncode == 1
    assert "100.0%" not in proc.stdout
    assert proc.stdout.startswith("Operator Coverage: nothing to judge: the script exited with status 1 "
                                  "before running any torch op")
    js = cli(["audit", "--format", "json", str(script)], tmp_path)
    data = json.loads(js.stdout)
    assert data["schema"] == "ascend-compat/audit" and data["schema_version"] and data["exit_code"] == 1


def test_audit_of_a_script_that_failed_midway_says_so(tmp_path):
    script = tmp_path / "half.py"
    script.write_text("import torch\nx = torch.ones(3) + 1\nraise SystemExit(5)\n")
    proc = cli(["audit", str(script)], tmp_path)
    assert proc.returncode == 5
    assert proc.stdout.startswith("The script exited with status 5: only the ops it ran before stopping")
    assert "Operator Coverage:" in proc.stdout


def test_unknown_error_code_once_with_nearest(tmp_path):
    """Was: 'Unknown code' twice and no nearest codes."""
    proc = cli(["error", "999999"], tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.count("nknown code") == 0 and proc.stdout.count("not a known Ascend error code") == 1
    assert re.search(r"nearest known codes: \d+ \w+", proc.stdout)


def test_json_outputs_are_versioned_in_one_naming_form(tmp_path):
    """Was: `ascend-compat/check` "1.0" next to `ascend-compat.profile` 1 (an int)."""
    from ascend_compat._schemas import VERSIONS

    (tmp_path / "s.py").write_text("import torch\nx = torch.ones(2).cuda()\nprint(x.sum().item())\n")
    runs = {"doctor": ["doctor", "--format", "json", "--no-import"], "error": ["error", "507035", "--format", "json"],
            "check": ["check", "--format", "json", "s.py"], "audit": ["audit", "--format", "json", "s.py"],
            "profile": ["profile", "--simulate", "--format", "json", "s.py"],
            "compare": ["compare", "--simulate", "--format", "json", "s.py"],
            "migrate-changes": ["migrate", "--changes", "changes.json", "s.py"],
            "run-record": ["compare", "--simulate", "--record", "run.json", "s.py"],
            "plan": ["plan", "--format", "json", "s.py"]}
    files = {"migrate-changes": "changes.json", "run-record": "run.json"}
    assert set(runs) == set(VERSIONS)
    for name, argv in runs.items():
        proc = cli(argv, tmp_path)
        text = (tmp_path / files[name]).read_text() if name in files else proc.stdout
        data = json.loads(text[text.index("{"):])
        assert data["schema"] == f"ascend-compat/{name}", (name, data["schema"])
        assert isinstance(data["schema_version"], str) and re.match(r"^\d+\.\d+$", data["schema_version"]), name


# ------------------------------------------------------------------------------ error --log
def test_log_with_nul_padding_is_scanned(tmp_path):
    """Was: a whole log rejected as binary for the NUL padding a crash leaves at the end of plog files."""
    log = tmp_path / "plog-pid_1.log"
    log.write_bytes(b"[ERROR] RUNTIME aclrtSynchronizeStream failed, error code is 507035\n" + b"\x00" * 20000)
    proc = cli(["error", "--log", str(log)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("1 finding(s) in") and "507035" in proc.stdout
    mid = tmp_path / "mid.log"  # a hole of zeros in the middle, text after it
    mid.write_bytes(b"step 1\n" + b"\x00" * 4096 + b"\nNPU out of memory. Tried to allocate 2 GiB\n")
    assert "npu_oom" in cli(["error", "--log", str(mid)], tmp_path).stdout


@pytest.mark.parametrize("encoding, bom", [("utf-16-le", codecs.BOM_UTF16_LE), ("utf-16-be", codecs.BOM_UTF16_BE),
                                           ("utf-16-le", b""), ("utf-8", codecs.BOM_UTF8)])
def test_utf16_and_bom_logs(tmp_path, encoding, bom):
    """Was: UTF-16 logs (Windows consoles, PowerShell redirection) rejected."""
    log = tmp_path / "x.log"
    text = "step 1\r\nE39999 something\r\n[ERROR] error code is 107002\r\n"
    log.write_bytes(bom + text.encode(encoding))
    proc = cli(["error", "--log", str(log), "--format", "json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    keys = [f["key"] for f in json.loads(proc.stdout)["log"]["findings"]]
    assert keys == ["E39999", "107002"]


def test_streaming_equals_whole_text_and_memory_is_bounded(tmp_path, monkeypatch):
    """Was: the whole log read into memory (500 MB log: 1.4 GB RSS). Now blocks of BLOCK bytes."""
    from ascend_compat.errors import logscan

    lines = []
    for i in range(120_000):
        lines.append(f"step {i} loss 2.{i % 97} tokens/s 51234\n")
        if i % 9_999 == 0:
            lines.append("UserWarning: CAUTION: The operator 'aten::mode' is not currently supported on the NPU "
                         "backend and will fall back to run on the CPU.\n")
        if i == 77_777:
            lines.append("[ERROR] HCCL function error: HcclAllReduce(...), error code is 9\n")
    text = "".join(lines)
    path = tmp_path / "big.log"
    path.write_text(text)
    monkeypatch.setattr(logscan, "BLOCK", 256 << 10)
    tracemalloc.start()
    streamed = logscan.scan_log(str(path))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    whole = logscan.scan_text(text)
    assert [(f.key, f.count, f.first_line) for f in streamed] == [(f.key, f.count, f.first_line) for f in whole]
    assert {f.key for f in streamed} == {"cpu_fallback", "hccl:9"}
    assert streamed[0].count == 13 and streamed[1].first_line == 77_787
    assert len(text) > 4_000_000 and peak < 3_000_000, peak  # a few blocks, not the 4 MB log


def test_compressed_log_names_the_decompressor(tmp_path):
    import bz2

    log = tmp_path / "x.log.bz2"
    log.write_bytes(bz2.compress(b"error code is 507035\n"))
    proc = cli(["error", "--log", str(log)], tmp_path)
    assert proc.returncode == 3 and "bzcat" in proc.stderr


# ------------------------------------------------------------------------------ environment variables
def test_bad_log_level_warns():
    """Was: ASCEND_COMPAT_LOG_LEVEL=garbage ignored silently."""
    proc = _py("import ascend_compat; print('ran')", {"ASCEND_COMPAT_LOG_LEVEL": "garbage"})
    assert proc.returncode == 0 and proc.stdout.strip() == "ran"
    assert "ASCEND_COMPAT_LOG_LEVEL='garbage'" in proc.stderr and "DEBUG, INFO, WARNING" in proc.stderr


def test_bad_boolean_warns_once_and_counts_as_off():
    code = ("from ascend_compat import _config\n"
            "print(_config.no_patch_requested(), _config.no_patch_requested())")
    proc = _py(code, {"ASCEND_COMPAT_NO_PATCH": "maybe"})
    assert proc.returncode == 0 and proc.stdout.strip() == "False False"
    assert proc.stderr.count("ASCEND_COMPAT_NO_PATCH='maybe'") == 1


def test_bad_device_capability_warns_and_uses_the_default():
    code = ("import ascend_compat\nfrom ascend_compat import simulator\nsimulator.install()\n"
            "ascend_compat.activate()\nimport torch\nprint(torch.cuda.get_device_capability())")
    proc = _py(code, {"ASCEND_COMPAT_DEVICE_CAPABILITY": "eight"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("(8, 0)")
    assert "ASCEND_COMPAT_DEVICE_CAPABILITY='eight'" in proc.stderr


def test_bad_simulator_setting_is_one_line_under_run(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    proc = cli(["run", "--simulate", str(script)], tmp_path, env_extra={"ASCEND_COMPAT_SIM_DEVICES": "two"})
    assert proc.returncode == 2
    assert proc.stderr.strip() == "ascend-compat run: error: ASCEND_COMPAT_SIM_DEVICES must be an integer, got 'two'"


def test_bad_simulator_setting_at_import_warns_and_uses_the_default():
    code = "import ascend_compat, torch\nprint('devices', torch.npu.device_count())"
    proc = _py(code, {"ASCEND_COMPAT_SIMULATE": "1", "ASCEND_COMPAT_SIM_DEVICES": "two",
                      "ASCEND_COMPAT_SIM_FLOAT64": "sometimes"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "devices 1"
    assert "ignoring ASCEND_COMPAT_SIM_DEVICES='two'" in proc.stderr
    assert "ignoring ASCEND_COMPAT_SIM_FLOAT64='sometimes'" in proc.stderr and "torch_npu, warn, strict, allow" in proc.stderr


def _reference_scan(text):
    """The per-line algorithm the streaming scanner replaced: (key, count, first_line) in order."""
    from collections import Counter

    from ascend_compat.errors import logscan as L

    ecode = re.compile(r"(?<![A-Za-z0-9_])(E[0-9A-Z]\d{4})(?![A-Za-z0-9_])")
    err = re.compile(r"(?<![A-Za-z0-9_])(ERR\d{5})(?![A-Za-z0-9_])")
    first, count = {}, Counter()
    for lineno, line in enumerate(text.split("\n"), 1):
        keys = []
        for m in L._NUM.finditer(line):
            n = int(m.group(1))
            if n:
                keys.append(f"hccl:{n}" if n < 100 and L._HCCL_LINE.search(line) else str(n))
        keys += [m.group(1) for m in ecode.finditer(line)] + [m.group(1) for m in err.finditer(line)]
        keys += [p.key for p in L.PATTERNS if p.regex.search(line)]
        for k in keys:
            count[k] += 1
            first.setdefault(k, lineno)
    return sorted(((k, count[k], first[k]) for k in first), key=lambda t: t[2])


@pytest.mark.parametrize("density", [0.001, 0.05, 0.9])
def test_streaming_scanner_equals_the_per_line_reference(tmp_path, monkeypatch, density):
    import random

    from ascend_compat.errors import logscan

    logs = ROOT / "tests" / "errors" / "fixtures" / "logs"
    interesting = [line for f in sorted(logs.glob("*.log")) for line in f.read_text().splitlines() if line.strip()]
    noise = ["step {i} loss 2.31 hccl rank 3 ok", "[INFO] HCCL(12,python) init done, time {i}",
             "Error codes table loaded: 1200 entries", "xE123456 ERR0000123 notE12345",
             "aclrtSynchronizeStream returned, error code is 0", "retry {i}: error code is 0"]
    rng = random.Random(density)
    lines = [rng.choice(interesting) if rng.random() < density else rng.choice(noise).format(i=i)
             for i in range(40_000)]
    text = "\n".join(lines) + "\n"
    path = tmp_path / "mix.log"
    path.write_text(text)
    monkeypatch.setattr(logscan, "BLOCK", 64 << 10)
    got = [(f.key, f.count, f.first_line) for f in logscan.scan_log(str(path))]
    want = _reference_scan(text)
    assert sorted(got, key=lambda t: (t[2], t[0])) == sorted(want, key=lambda t: (t[2], t[0]))
    assert [k for k, _, _ in got] == [k for k, _, _ in sorted(got, key=lambda t: t[2])]  # first-appearance order


def test_syntax_error_file_keeps_its_other_findings(tmp_path):
    """It exited 0 and its `.cuda(` findings were dropped; now it is an input error that counts
    toward --fail-on, and the lines around the broken one are still analysed."""
    f = tmp_path / "broken.py"
    f.write_text("import torch\nx = torch.zeros(2).cuda()\nif True\n    y = 1\nz = torch.ones(3).cuda()\n")
    proc = cli(["check", "--format", "concise", str(f)], tmp_path)
    lines = proc.stdout.splitlines()
    assert any(":3:1: input-error" in ln and "syntax error at line 3" in ln for ln in lines), proc.stdout
    assert sum(":2:20: cuda-method" in ln or ":5:19: cuda-method" in ln for ln in lines) == 2, proc.stdout
    assert cli(["check", "--fail-on", "any", str(f)], tmp_path).returncode == 1


def test_check_of_a_path_that_does_not_exist_prints_no_report(tmp_path):
    """Was: exit 3, and the summary box all the same ("Migration difficulty NONE")."""
    for fmt in ("text", "json"):
        proc = cli(["check", "--format", fmt, "nonexistent_dir"], tmp_path)
        assert proc.returncode == 3 and proc.stdout == ""
        assert proc.stderr == "ascend-compat check: error: nonexistent_dir: no such file or directory\n"


def test_messages_name_the_kind_once():
    """Was: `ascend-compat error: error: 'banana' is not an error code` (the command is called error)."""
    for argv in (["error", "banana"], ["error", "--bogus"], ["error"]):
        proc = cli(argv, ROOT)
        assert proc.returncode == 2
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith("ascend-compat error: ") and "error: error:" not in last, last
    proc = cli(["check", "--bogus"], ROOT)
    assert proc.stderr.strip().splitlines()[-1] == "ascend-compat check: error: unrecognized arguments: --bogus"


def test_doctor_help_lists_root():
    """Was: `--root` was documented in docs/cli.md but hidden from `doctor --help`."""
    proc = cli(["doctor", "--help"], ROOT)
    assert "--root DIR" in proc.stdout
