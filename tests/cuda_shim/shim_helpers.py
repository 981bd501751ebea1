"""Helpers shared by the shim tests (subprocess runners with a clean environment)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "tests" / "scripts"


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ASCEND_COMPAT_", "CUDA_VISIBLE", "ASCEND_RT_", "NCCL_", "HCCL_", "PYTORCH_"))}
    env.update(extra)
    return env


def run_python(code: str, timeout: int = 300, **env: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (clean ascend-compat environment plus ``env``)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=clean_env(**env), cwd=str(REPO))
