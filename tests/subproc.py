"""The one subprocess runner of the test suite: run Python code in a fresh interpreter with the
project's switches removed from the environment.

Process-global state (the simulator install, the shim, import hooks, drop-in finders) is tested
this way. ``env`` (a dict) and keyword arguments both add variables to the clean environment.
"""
from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Dict, Optional

REPO = Path(__file__).resolve().parents[1]

#: variables that steer ascend-compat, torch_npu, CUDA/NCCL/HCCL or torch itself
STRIPPED = ("ASCEND_COMPAT_", "TORCH_NPU_", "ASCEND_RT_", "CUDA_VISIBLE", "NCCL_", "HCCL_", "PYTORCH_",
            "RANK_TABLE_FILE", "ASCEND_PROCESS_LOG_PATH")
#: where the simulated NPU's CANN logs (plog) go in tests, instead of ~/ascend/log
PLOG_DIR = tempfile.mkdtemp(prefix="ascend_compat_test_plog_")
atexit.register(shutil.rmtree, PLOG_DIR, True)


def clean_env(env: Optional[Dict[str, str]] = None, **extra: str) -> Dict[str, str]:
    """This process's environment without the variables in :data:`STRIPPED` (and LOCAL_WORLD_SIZE),
    plogs sent to :data:`PLOG_DIR`, updated with ``env`` and ``extra``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(STRIPPED) and k != "LOCAL_WORLD_SIZE"}
    base["ASCEND_PROCESS_LOG_PATH"] = PLOG_DIR
    base.update(env or {})
    base.update(extra)
    return base


def run_python(code: str, env: Optional[Dict[str, str]] = None, timeout: float = 300,
               cwd: Optional[str] = None, **extra: str) -> subprocess.CompletedProcess:
    """Run ``code`` (dedented) with this interpreter in a clean environment (see :func:`clean_env`),
    from the repository root unless ``cwd`` is given; returns the completed process (text output)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=clean_env(env, **extra),
                          capture_output=True, text=True, timeout=timeout, cwd=str(cwd or REPO))


def check(proc: subprocess.CompletedProcess) -> str:
    """Assert the process exited 0 (showing the tail of its output otherwise); return its stdout."""
    assert proc.returncode == 0, (f"exit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\n"
                                  f"stderr:\n{proc.stderr[-5000:]}")
    return proc.stdout


def result(proc: subprocess.CompletedProcess) -> dict:
    """The ``key=value`` pairs of the last ``RESULT ...`` line the process printed (exit 0 asserted)."""
    lines = [line for line in check(proc).splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stdout[-2000:]
    return dict(item.split("=", 1) for item in lines[-1][len("RESULT "):].split())


def load_tool(name: str):
    """The script ``tools/<name>.py`` imported as module ``name`` (tools/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
