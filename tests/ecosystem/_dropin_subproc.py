"""Subprocess runner for the drop-in tests (flash_attn/apex/xformers/bitsandbytes): module finders and
the simulator install are process-global, so each scenario runs in a fresh interpreter."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "scripts"


def env(**extra: str) -> dict:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("ASCEND_COMPAT_", "CUDA_VISIBLE", "ASCEND_RT_", "NCCL_", "HCCL_", "TORCH_NPU_"))}
    base.update(extra)
    return base


def run(code: str, timeout: int = 300, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env(**extra), cwd=str(REPO))


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-5000:]}"
    return proc.stdout


def result(proc: subprocess.CompletedProcess) -> dict:
    out = ok(proc)
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert lines, out[-2000:]
    return dict(item.split("=", 1) for item in lines[-1][len("RESULT "):].split())
