"""The suite's subprocess runner (``tests/subproc.py``) as the simulator tests call it: warnings
shown once per location (``PYTHONWARNINGS=default``) so tests can read them from stderr."""
from __future__ import annotations

from typing import Dict, Optional

import subproc
from subproc import check  # noqa: F401 - re-exported for the simulator tests


def clean_env(env: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    return subproc.clean_env({"PYTHONWARNINGS": "default", **(env or {})})


def run_python(code: str, env: Optional[Dict[str, str]] = None, timeout: float = 180, cwd: Optional[str] = None):
    return subproc.run_python(code, env={"PYTHONWARNINGS": "default", **(env or {})}, timeout=timeout, cwd=cwd)
