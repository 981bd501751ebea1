"""``ascend-compat run``: the launcher behaves like ``python SCRIPT`` / ``python -m MODULE``."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import sys
    print("name", __name__)
    print("argv", sys.argv[1:])
    print("path0", sys.path[0])
    if "--fail" in sys.argv:
        def inner():
            raise ValueError("boom from user code")
        inner()
    if "--exit" in sys.argv:
        sys.exit(int(sys.argv[-1]))
    """
)


def _run(args, cwd, env_extra=None):
    env = dict(os.environ)
    env.pop("ASCEND_COMPAT_SIMULATE", None)
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "ascend_compat", "run", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )


def test_script_gets_main_semantics_and_argv(tmp_path: Path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    proc = _run([str(script), "--lr", "0.1", "-x"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "name __main__" in proc.stdout
    assert "argv ['--lr', '0.1', '-x']" in proc.stdout
    assert f"path0 {tmp_path}" in proc.stdout


def test_exit_code_is_propagated(tmp_path: Path):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    assert _run([str(script), "--exit", "7"], cwd=tmp_path).returncode == 7


def test_exception_traceback_starts_in_user_code(tmp_path: Path):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    proc = _run([str(script), "--fail"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "ValueError: boom from user code" in proc.stderr
    frames = [line for line in proc.stderr.splitlines() if line.lstrip().startswith("File ")]
    assert frames and str(script) in frames[0], proc.stderr
    assert "runpy" not in proc.stderr and "cli/run.py" not in proc.stderr


def test_module_form(tmp_path: Path):
    (tmp_path / "mymod.py").write_text(SCRIPT)
    proc = _run(["-m", "mymod", "a", "b"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "name __main__" in proc.stdout
    assert "argv ['a', 'b']" in proc.stdout


def test_missing_script_is_a_clear_error(tmp_path: Path):
    proc = _run(["does_not_exist.py"], cwd=tmp_path)
    assert proc.returncode == 3  # input error (docs/cli.md)
    assert "does_not_exist.py" in proc.stderr and "no such file" in proc.stderr


def test_no_target_is_a_usage_error(tmp_path: Path):
    proc = _run([], cwd=tmp_path)
    assert proc.returncode == 2
    assert "SCRIPT" in proc.stderr
