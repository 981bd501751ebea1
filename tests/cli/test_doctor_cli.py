"""``ascend-compat doctor`` as a real subprocess, on this machine and on fixture roots."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "doctor" / "fixtures"


def run(*args, env=None):
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND", "CUDA_VISIBLE", "TORCH_DEVICE"))}
    base.update(env or {})
    return subprocess.run([sys.executable, "-m", "ascend_compat", "doctor", *args], capture_output=True, text=True,
                          env=base, timeout=120)


def test_this_machine_text():
    """No NPU here: the report must say so (FAIL, exit 1) and name the fixes."""
    p = run("--no-import")
    assert p.returncode == (1 if "[FAIL]" in p.stdout else 0), p.stdout + p.stderr
    assert any(f"[{s}] torch " in p.stdout for s in (" OK ", "WARN", "FAIL"))  # CPU build, CUDA build, missing
    if not Path("/dev/davinci0").exists():
        assert "[FAIL] devices" in p.stdout and p.returncode == 1
    assert p.stdout.rstrip().splitlines()[-1].endswith("INFO")


def test_simulate_flag_reports_simulated_devices_and_no_hardware_failures():
    p = run("--simulate", "--format", "json", "--no-import")
    data = json.loads(p.stdout)
    assert data["simulated"] is True
    devices = [c for c in data["checks"] if c["name"] == "devices"][0]
    assert devices["status"] == "INFO" and devices["detail"].startswith("SIMULATED")
    hw = {c["name"] for c in data["checks"] if c["status"] == "FAIL"}
    assert not hw & {"cann", "driver", "devices", "torch_npu"}
    assert p.returncode == (1 if hw else 0)


def test_env_var_simulation_and_device_count():
    p = run("--format", "json", "--no-import",
            env={"ASCEND_COMPAT_SIMULATE": "1", "ASCEND_COMPAT_SIM_DEVICES": "2", "ASCEND_RT_VISIBLE_DEVICES": "0,1"})
    data = json.loads(p.stdout)
    vis = [c for c in data["checks"] if c["name"] == "visible_devices"][0]
    assert vis["status"] == "OK" and "2 of 2" in vis["detail"]


def test_fixture_root_json_and_exit_codes():
    root = FIXTURES / "toolkit83"
    tk = "/usr/local/Ascend/ascend-toolkit/latest"
    env = {"PATH": f"{root / 'bin'}:/usr/bin:/bin", "ASCEND_HOME_PATH": tk, "ASCEND_OPP_PATH": f"{tk}/opp",
           "LD_LIBRARY_PATH": f"{tk}/lib64"}
    p = run("--root", str(root), "--format", "json", "--no-import", env=env)
    data = json.loads(p.stdout)
    by = {c["name"]: c for c in data["checks"]}
    assert by["cann"]["status"] == "OK" and "8.3.RC1" in by["cann"]["detail"]
    assert by["npu_smi"]["status"] == "OK" and "8 x 910B3" in by["npu_smi"]["detail"]
    assert set(data["summary"]) == {"OK", "WARN", "FAIL", "INFO"}
    # the real torch of this interpreter has no torch_npu next to it -> FAIL -> exit 1
    assert p.returncode == (1 if data["summary"]["FAIL"] else 0)
    p = run("--root", str(root), "--no-import", env={**env, "ASCEND_RT_VISIBLE_DEVICES": "3,1"})
    assert p.returncode == 1 and "not ascending" in p.stdout


def test_bad_root():
    p = run("--root", "/definitely/not/here")
    assert p.returncode == 3 and "not a directory" in p.stderr
