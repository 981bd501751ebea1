"""Run knowledge-record examples under ``ascend-compat run --simulate``, many in one subprocess.

:func:`run_examples` executes each example (name -> code) in its own namespace and reports, per
name, ``"ran:<last printed line>"`` or ``"raised:<exception type>: <message>"`` (ImportError and its
subclasses as ``"raised:ImportError"``); ``extra`` code may add entries to the report (``out``).
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from subproc import REPO, clean_env


def run_simulated(script: str, tmp_path: Path, **env: str) -> dict:
    """Run ``script`` under the simulated NPU; the JSON object its last output line holds."""
    path = tmp_path / "examples.py"
    path.write_text(textwrap.dedent(script))
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "run", "--simulate", str(path)],
                          capture_output=True, text=True, timeout=600, env=clean_env(**env), cwd=str(REPO))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_examples(examples: dict, tmp_path: Path, extra: str = "") -> dict:
    """Each example in one simulated run (see the module docstring)."""
    return run_simulated(f"""
import contextlib, io, json, os, tempfile
os.chdir(tempfile.mkdtemp())
out = {{}}
for name, code in {examples!r}.items():
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(code, name, "exec"), {{}})
        lines = buf.getvalue().strip().splitlines()
        out[name] = "ran:" + (lines[-1] if lines else "")
    except ImportError as e:
        out[name] = "raised:ImportError"
    except Exception as e:
        out[name] = "raised:" + type(e).__name__ + ": " + str(e)[:300]
{extra}
print(json.dumps(out))
""", tmp_path)
