"""``ascend-compat error`` as a real subprocess: codes, logs, stdin, bad input."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

LOGS = Path(__file__).resolve().parents[1] / "errors" / "fixtures" / "logs"


def run(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "ascend_compat", "error", *args], capture_output=True, text=True,
                          input=stdin, timeout=60)


def test_codes_text():
    p = run("507035", "EZ9999")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("507035  ACL_ERROR_RT_VECTOR_CORE_EXCEPTION")
    assert "\n\nEZ9999  " in p.stdout and "ASCEND_LAUNCH_BLOCKING=1" in p.stdout


def test_codes_json():
    p = run("107002", "ERR01100", "hccl:9", "--format", "json")
    data = json.loads(p.stdout)
    assert [c["code"] for c in data["codes"]] == ["107002", "ERR01100", "9"]
    assert "context is empty" in data["codes"][0]["meaning"] and data["errors"] == []


def test_unknown_code_gets_family_and_nearest():
    p = run("507777")
    assert p.returncode == 0 and "nearest known codes:" in p.stdout and "rt_internal" in p.stdout


def test_bad_code_exit_2_but_good_ones_still_explained():
    p = run("507035", "banana")
    assert p.returncode == 2 and "'banana' is not an error code" in p.stderr
    assert "507035" in p.stdout


def test_no_arguments():
    p = run()
    assert p.returncode == 2 and "give one or more codes" in p.stderr


def test_log_file():
    p = run("--log", str(LOGS / "vector_core_507035.log"))
    assert p.returncode == 0
    assert p.stdout.startswith("4 finding(s) in ")
    for key in ("507035  ", "ERR00100  ", "EZ9999  ", "async_trace  "):
        assert "\n" + key in p.stdout


def test_log_stdin_json():
    p = run("--log", "-", "--format", "json", stdin=(LOGS / "cpu_fallback.log").read_text())
    data = json.loads(p.stdout)
    (f,) = data["log"]["findings"]
    assert data["log"]["source"] == "-" and f["details"]["ops"]["aten::isin.Tensor_Tensor_out"] == 3


def test_clean_log_exit_1():
    p = run("--log", str(LOGS / "clean.log"))
    assert p.returncode == 1 and "no Ascend error code" in p.stdout


def test_binary_and_missing_logs(tmp_path):
    b = tmp_path / "core.bin"
    b.write_bytes(b"\x7fELF\x00\x00\x01" * 50)
    p = run("--log", str(b))
    assert p.returncode == 3 and "binary" in p.stderr and p.stdout == ""
    p = run("--log", str(tmp_path / "nope.log"))
    assert p.returncode == 3 and "no such file" in p.stderr
