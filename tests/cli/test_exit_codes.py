"""The exit-code table of docs/cli.md, run row by row: every documented command and option gives the
documented exit code, without a Python traceback, and usage errors show the right command's usage."""
from __future__ import annotations

import gzip
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cli.md"
ROW = re.compile(r"^\| (\(none\)|\w+) \| (\d+) \| ([^|]+) \| `(ascend-compat[^`]*)` \|$")


def _rows():
    rows = [m.groups() for m in map(ROW.match, DOC.read_text(encoding="utf-8").splitlines()) if m]
    return [pytest.param(cmd, int(code), example, id=f"{cmd}-{code}-{when.strip()}") for cmd, code, when, example in rows]


ROWS = _rows()


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("sandbox")
    (d / "cuda_train.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    (d / "broken.py").write_text("x = (\nmodel.cuda()\n")
    (d / "binary.py").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    (d / "with_fifo").mkdir()
    os.mkfifo(d / "with_fifo" / "pipe.py")
    (d / "with_fifo" / "plain.py").write_text("x = 1\n")
    (d / "blank_tail.py").write_text("import os\nx = 1\n\n   ")
    (d / "empty").mkdir()
    (d / "app").mkdir()
    (d / "app" / "__main__.py").write_text("print('app ran')\n")
    (d / "notes").mkdir()
    (d / "notes" / "README.txt").write_text("no code here\n")
    (d / "exit7.py").write_text("import sys\nsys.exit(7)\n")
    (d / "crash.py").write_text("raise SystemExit(1)\n")
    (d / "train.log").write_text("step 1\n[ERROR] rtStreamSynchronize failed, error code is 507035\n")
    (d / "clean.log").write_text("step 1 loss 2.3\nstep 2 loss 2.1\n")
    (d / "train.log.gz").write_bytes(gzip.compress(b"error code is 507035\n" * 10))
    (d / "empty.txt").write_text("")
    return d


def cli(argv, cwd, stdin_path=None, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_COMPAT_")}
    env.update({"XDG_CACHE_HOME": str(Path(cwd) / ".cache-home"), "NO_COLOR": "1", "TERM": "xterm-256color"},
               **(env_extra or {}))
    env.pop("CI", None)  # these tests set what they want; progress stays off because stderr is a pipe
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    try:
        return subprocess.run([sys.executable, "-m", "ascend_compat", *argv], cwd=cwd, env=env, stdin=stdin,
                              capture_output=True, text=True, timeout=300)
    finally:
        if stdin_path:
            stdin.close()


def test_the_table_covers_every_command_and_code():
    assert ROWS, f"no exit-code rows found in {DOC}"
    seen = {(p.values[0], p.values[1]) for p in ROWS}
    for cmd in ("check", "migrate", "doctor", "error", "run", "audit", "profile"):
        assert (cmd, 2) in seen or (cmd, 3) in seen, cmd
    for code in (0, 1, 2, 3):
        assert any(c == code for _, c in seen), code


@pytest.mark.parametrize("cmd, code, example", ROWS)
def test_documented_exit_code(sandbox, cmd, code, example):
    words = shlex.split(example)
    stdin = None
    if "<" in words:
        i = words.index("<")
        stdin, words = sandbox / words[i + 1], words[:i]
    proc = cli(words[1:], sandbox, stdin)
    assert proc.returncode == code, f"{example}: exit {proc.returncode}\n{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}"
    assert "Traceback" not in proc.stderr, proc.stderr
    if code == 2 and cmd != "(none)":
        assert f"ascend-compat {cmd}" in proc.stderr, proc.stderr  # the command's own usage or message
    if code in (2, 3):
        assert proc.stderr.strip(), "an error must say why"
    assert not list(sandbox.glob("**/*.tmp")), "no stray temporary files"


def test_subcommand_usage_for_unknown_option(sandbox):
    proc = cli(["check", "--bogus", "."], sandbox)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: ascend-compat check ")
    assert "unrecognized arguments: --bogus" in proc.stderr


def test_debug_keeps_the_traceback(sandbox):
    proc = cli(["check", "--debug", "empty"], sandbox)
    assert proc.returncode == 3
    assert "Traceback" in proc.stderr and "no Python files found" in proc.stderr


def test_cache_flag_takes_no_value_and_writes_nothing_into_the_repository(sandbox, tmp_path):
    repo = tmp_path / "nanoGPT"
    repo.mkdir()
    (repo / "train.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    proc = cli(["check", "--cache", "--format", "concise", str(repo)], sandbox)
    assert proc.returncode == 0, proc.stderr
    assert "train.py:2:" in proc.stdout and "cuda-method" in proc.stdout
    assert sorted(p.name for p in repo.iterdir()) == ["train.py"]
    cache = sandbox / ".cache-home" / "ascend-compat" / "check"
    assert any(cache.rglob("*.json")), "the cache went to the user cache directory"


def test_missing_path_is_reported_even_with_other_paths(sandbox):
    proc = cli(["check", "--format", "json", "cuda_train.py", "typo_dir/"], sandbox)
    assert proc.returncode == 3
    assert "typo_dir/: no such file or directory" in proc.stderr
    assert '"missing"' in proc.stdout  # the report still lists it


def test_syntax_error_is_an_input_error_finding(sandbox):
    proc = cli(["check", "--format", "concise", "broken.py"], sandbox)
    assert proc.returncode == 0
    assert re.search(r"^broken\.py:1:1: input-error parse-error: syntax error at line 1.*\(error\)$", proc.stdout, re.M)
    proc = cli(["check", "--format", "github", "--fail-on", "hard", "broken.py"], sandbox)
    assert proc.returncode == 1
    assert proc.stdout.startswith("::error file=broken.py,line=1,col=1,title=ascend-compat input-error::")


def test_stdin_findings_are_named_dash(sandbox):
    proc = cli(["check", "--format", "concise", "-"], sandbox, sandbox / "cuda_train.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("-:2:")
