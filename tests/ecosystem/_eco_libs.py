"""Helpers for the library-integration tests (transformers, accelerate, DeepSpeed, Lightning).

Everything runs in fresh subprocesses: the simulator install is process-global.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest

SCRIPTS = Path(__file__).parent / "scripts"


def need(module: str, dist: str):
    """A pytest skip marker for when ``module`` is not installed, saying why and how to get it."""
    return pytest.mark.skipif(
        importlib.util.find_spec(module) is None,
        reason=f"{dist} is not installed in this environment (pip install 'ascend-compat[{dist}]')")


def env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """This environment minus simulator/shim switches, plus offline hub settings and ``extra``."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("ASCEND_COMPAT_", "TORCH_NPU_", "ASCEND_RT_", "ACCELERATE_", "PL_"))
            and k not in ("LOCAL_WORLD_SIZE", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    base.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false",
                 "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"})
    base.update(extra or {})
    return base


def run(argv: List[str], extra_env: Optional[Dict[str, str]] = None, timeout: float = 240,
        cwd: Optional[str] = None) -> subprocess.CompletedProcess:
    """Run ``argv`` (``python`` = this interpreter); fail the test with all output if it fails."""
    if argv[0] == "python":
        argv = [sys.executable] + argv[1:]
    proc = subprocess.run(argv, env=env(extra_env), capture_output=True, text=True, timeout=timeout, cwd=cwd)
    assert proc.returncode == 0, (f"{' '.join(argv)} exited {proc.returncode}\n--- stdout\n{proc.stdout[-6000:]}"
                                  f"\n--- stderr\n{proc.stderr[-8000:]}")
    return proc


def results(proc: subprocess.CompletedProcess) -> List[dict]:
    """Every ``RESULT {json}`` line the script(s) printed, in order."""
    decoder = json.JSONDecoder()
    out = []
    for line in proc.stdout.splitlines():
        at = line.find("RESULT {")
        if at >= 0:  # another rank's output may precede it on the same line
            out.append(decoder.raw_decode(line, at + len("RESULT "))[0])
    assert out, f"no RESULT line\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
    return out
