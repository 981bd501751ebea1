"""The suite's subprocess runner (``tests/subproc.py``) under the names the ecosystem tests use:
module finders and the simulator install are process-global, so each scenario runs in a fresh
interpreter."""
from __future__ import annotations

from pathlib import Path

from subproc import REPO, check as ok, clean_env as env, result, run_python as run  # noqa: F401

SCRIPTS = Path(__file__).resolve().parent / "scripts"
