"""Run Python code in a fresh interpreter (for process-global simulator configurations)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Dict, Optional


def clean_env(env: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The current environment without simulator/torch_npu switches, updated with ``env``."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("ASCEND_COMPAT_", "TORCH_NPU_", "ASCEND_RT_")) and k not in ("LOCAL_WORLD_SIZE",)}
    base["PYTHONWARNINGS"] = "default"
    base.update(env or {})
    return base


def run_python(code: str, env: Optional[Dict[str, str]] = None, timeout: float = 180,
               cwd: Optional[str] = None) -> subprocess.CompletedProcess:
    """Run ``code`` (dedented) with this interpreter; return the completed process (text output)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=clean_env(env),
                          capture_output=True, text=True, timeout=timeout, cwd=cwd)


def check(proc: subprocess.CompletedProcess) -> str:
    """Assert the process exited 0 (showing its output otherwise); return its stdout."""
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout
