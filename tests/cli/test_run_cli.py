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


def test_file_is_absolute_and_argv0_as_given(tmp_path: Path):
    """Was: ``__file__`` was the relative path given (python 3.9+ makes it absolute)."""
    (tmp_path / "s.py").write_text("import sys\nprint('FILE', __file__, sys.argv[0], __spec__)\n")
    proc = _run(["s.py"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    direct = subprocess.run([sys.executable, "s.py"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.stdout == direct.stdout == f"FILE {tmp_path / 's.py'} s.py None\n"


def test_directory_with_main_and_dev_null_run_as_under_python(tmp_path: Path):
    """Was: ``run DIR`` was refused ("is a directory") and ``run /dev/null`` said "no such file"."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__main__.py").write_text("import sys\nprint('APP', sys.argv[1:])\n")
    proc = _run(["app", "x"], cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == "APP ['x']\n", proc.stderr
    proc = _run([os.devnull], cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""


def test_a_script_that_cannot_start_is_one_line_and_no_report(tmp_path: Path):
    """Was: the CLI's and runpy's frames, then ``compare`` said "no departure" and ``profile`` "no findings"."""
    (tmp_path / "broken.py").write_text("x = (\n")
    (tmp_path / "blob.py").write_bytes(b"\x00\x01binary")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    for command in ("run", "audit", "profile", "compare"):
        for target, says in ((["broken.py"], "broken.py:1:5: SyntaxError: '(' was never closed"),
                             (["blob.py"], "blob.py: not Python source"),
                             (["-m", "missing_mod"], "-m missing_mod: no module named 'missing_mod'"),
                             (["-m", "pkg.missing"], "-m pkg.missing: No module named pkg.missing")):
            proc = subprocess.run([sys.executable, "-m", "ascend_compat", command, *target], cwd=tmp_path,
                                  capture_output=True, text=True, timeout=120)
            assert proc.returncode == 3, (command, target, proc.stderr)
            assert proc.stdout == "", (command, target, proc.stdout)
            assert proc.stderr.startswith(f"ascend-compat {command}: error: {says}"), proc.stderr
            assert len(proc.stderr.splitlines()) == 1, proc.stderr


def test_an_error_raised_by_the_users_package_keeps_its_traceback(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("import not_installed_dependency\n")
    (tmp_path / "pkg" / "train.py").write_text("print('never')\n")
    proc = _run(["-m", "pkg.train"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "pkg/__init__.py" in proc.stderr
    assert "No module named 'not_installed_dependency'" in proc.stderr


def test_help_names_the_script_and_module_forms():
    """Was: ``run --help`` showed ``-m ...`` (argparse's REMAINDER metavar)."""
    for command in ("run", "audit", "profile", "compare"):
        proc = subprocess.run([sys.executable, "-m", "ascend_compat", command, "--help"], capture_output=True,
                              text=True, timeout=120)
        usage = " ".join(proc.stdout.split("\n\n")[0].split())
        assert "[-m MODULE [ARGS...]]" in usage and usage.endswith("SCRIPT [ARGS...]"), usage
