"""The suite's subprocess runner (``tests/subproc.py``) under the names the shim tests use."""
from __future__ import annotations

from subproc import REPO, clean_env, run_python  # noqa: F401

SCRIPTS = REPO / "tests" / "scripts"
