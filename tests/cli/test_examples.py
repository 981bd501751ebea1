"""The README's main job: the example CUDA script trains, unmodified, on the simulated NPU."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


def _env():
    env = dict(os.environ)
    for name in ("ASCEND_COMPAT_SIMULATE", "ASCEND_COMPAT_NO_PATCH", "CUDA_VISIBLE_DEVICES"):
        env.pop(name, None)
    return env


def test_cuda_example_trains_on_simulated_npu():
    proc = subprocess.run(
        [sys.executable, "-m", "ascend_compat", "run", "--simulate", str(ROOT / "examples" / "train_cuda.py"),
         "--steps", "25"],
        env=_env(), capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "device: npu" in proc.stdout
    assert "on npu:0" in proc.stdout and "cuda" not in proc.stdout.split("device:")[1].split("\n")[0]
    assert "checkpoint round trip OK" in proc.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="a real CUDA GPU is present: the script would simply run")
def test_cuda_example_fails_without_shim_on_this_cpu_machine():
    """Guard against a vacuous pass: the script really is CUDA code, and plain python cannot run it here."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "train_cuda.py"), "--steps", "2"],
        env=_env(), capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode != 0
    assert "CUDA" in proc.stderr or "NVIDIA" in proc.stderr, proc.stderr[-2000:]


def test_demo_trains_on_npu():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo_train.py"), "--steps", "30"],
        env=_env(), capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "device npu:0" in proc.stdout
