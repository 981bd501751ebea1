"""The README's main command: examples/demo_train.py trains on the simulated npu:0 by itself."""
from __future__ import annotations

import pathlib
import sys

from tests.simulator._subproc import check, run_python

DEMO = pathlib.Path(__file__).resolve().parents[2] / "examples" / "demo_train.py"


def test_demo_trains_on_npu():
    out = check(run_python(f"""
        import runpy, sys
        sys.argv = [{str(DEMO)!r}, "--steps", "60"]
        runpy.run_path({str(DEMO)!r}, run_name="__main__")
    """))
    lines = [line for line in out.splitlines() if line.startswith("step")]
    assert lines and all("device npu:0" in line for line in lines)
    first, last = (float(line.split("loss")[1].split()[0]) for line in (lines[0], lines[-1]))
    assert last < first
    assert "model on npu:0, data on npu:0" in out
