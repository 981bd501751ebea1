"""migrate never damages a file: encodings, BOM and line endings kept, libcst round-trip checked,
symlinks never followed out of the given paths nor replaced, ``--output`` reproduces the tree and
copies every file, non-regular and oversized files skipped, bad notebooks explained, idempotent."""
from __future__ import annotations

import codecs
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from ascend_compat.analysis.migrate.apply import MAX_BYTES, MigrateUsageError, migrate_paths
from subproc import REPO, clean_env

CUDA = "import torch\nx = torch.zeros(2).cuda()\n"


def cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "ascend_compat", "migrate", *args], cwd=str(cwd),
                          capture_output=True, text=True, timeout=120, env=clean_env(NO_COLOR="1"))


def test_latin1_file_with_cookie_stays_latin1(tmp_path):
    f = tmp_path / "lat.py"
    f.write_bytes(b'# -*- coding: latin-1 -*-\nimport torch\ns = "caf\xe9"\nx = torch.zeros(2).cuda()\n')
    (out,) = migrate_paths([str(f)], write=True)
    assert out.changed and out.error is None
    data = f.read_bytes()
    assert b'"caf\xe9"' in data and b".npu()" in data
    data.decode("latin-1")  # still the encoding its cookie declares
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")


def test_bom_and_crlf_are_kept(tmp_path):
    f = tmp_path / "bom.py"
    f.write_bytes(codecs.BOM_UTF8 + CUDA.replace("\n", "\r\n").encode())
    (out,) = migrate_paths([str(f)], write=True)
    data = f.read_bytes()
    assert out.changed and data.startswith(codecs.BOM_UTF8)
    body = data[3:].decode()
    assert ".npu()" in body and body.count("\r\n") == body.count("\n")  # every line, inserted ones too


def test_form_feed_file_is_idempotent(tmp_path):
    f = tmp_path / "ff.py"
    f.write_text("import torch\n\x0c\ndef f():\n    return torch.zeros(2).cuda()\n")
    first = migrate_paths([str(f)], write=True)[0]
    after_first = f.read_bytes()
    second = migrate_paths([str(f)], write=True)[0]
    assert f.read_bytes() == after_first and not second.changed
    assert first.changed or first.error  # rewritten, or left untouched with a reason


def test_file_symlink_is_not_replaced_and_directory_symlink_not_followed_out(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "lib.py").write_text(CUDA)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "linked_dir").symlink_to(outside)
    (tree / "real.py").write_text(CUDA)
    (tree / "link.py").symlink_to(tree / "real.py")
    outcomes = {Path(o.path).name: o for o in migrate_paths([str(tree)], write=True)}
    assert (outside / "lib.py").read_text() == CUDA  # outside the given tree: untouched, not even listed
    assert "lib.py" not in outcomes and "outside the given paths" in outcomes["linked_dir"].error
    assert (tree / "link.py").is_symlink()
    assert ".npu()" in (tree / "real.py").read_text()


def test_output_reproduces_the_tree_and_copies_every_file(tmp_path):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "main.py").write_text(CUDA)
    (tmp_path / "a" / "config.yaml").write_text("lr: 1\n")
    out = tmp_path / "out"
    migrate_paths([str(tmp_path / "a"), str(tmp_path / "b")], output_dir=str(out))
    assert ".npu()" in (out / "a" / "main.py").read_text() and ".npu()" in (out / "b" / "main.py").read_text()
    assert (out / "a" / "config.yaml").read_text() == "lr: 1\n"
    assert (tmp_path / "a" / "main.py").read_text() == CUDA  # inputs untouched


def test_output_never_overwrites(tmp_path):
    (tmp_path / "t.py").write_text(CUDA)
    with pytest.raises(MigrateUsageError, match="not empty"):
        migrate_paths([str(tmp_path / "t.py")], output_dir=str(tmp_path))
    proc = cli("t.py", "--output", ".", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "not empty" in proc.stderr
    assert (tmp_path / "t.py").read_text() == CUDA


def test_fifo_and_oversized_files_are_skipped(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" * (MAX_BYTES // 6 + 10))
    (tmp_path / "ok.py").write_text(CUDA)
    outcomes = {Path(o.path).name: o for o in migrate_paths([str(tmp_path)], write=True)}
    assert "not a regular file" in outcomes["pipe.py"].skipped and outcomes["pipe.py"].error is None
    assert "larger than" in outcomes["big.py"].error
    assert outcomes["ok.py"].changed
    check = subprocess.run([sys.executable, "-m", "ascend_compat", "check", str(tmp_path / "pipe.py")],
                           capture_output=True, text=True, timeout=60, env=clean_env(NO_COLOR="1"))
    assert "not a regular file" in check.stdout + check.stderr  # returns instead of blocking on the pipe


def test_a_last_line_of_blanks_is_migrated_and_kept(tmp_path):
    """Was: libcst does not reproduce "...\\n\\n   ", so the file was left untouched and migrate exited 1."""
    (tmp_path / "plain.py").write_text("x = 1\n\n   ")
    (tmp_path / "t.py").write_text(CUDA + "\n   ")
    outcomes = {Path(o.path).name: o for o in migrate_paths([str(tmp_path)], write=True)}
    assert outcomes["plain.py"].error is None and not outcomes["plain.py"].changed
    assert outcomes["t.py"].error is None and outcomes["t.py"].changed
    text = (tmp_path / "t.py").read_text()
    assert text.endswith("\n\n   ") and ".cuda()" not in text


def test_bad_notebooks_are_explained(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": ["x = 1\n", 7], "metadata": {}, "outputs": []}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "odd.ipynb").write_text(json.dumps(nb))
    (tmp_path / "deep.ipynb").write_text("[" * 100000 + "]" * 100000)
    outcomes = {Path(o.path).name: o for o in migrate_paths([str(tmp_path)])}
    assert any("not text" in f.suggestion or "not text" in f.message for f in outcomes["odd.ipynb"].remaining)
    assert "nested too deeply" in outcomes["deep.ipynb"].error or "not a Jupyter" in outcomes["deep.ipynb"].error


def test_attention_list_names_the_migrated_file(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "t.py").write_text("import torch\nimport pycuda.autoinit\nx = torch.zeros(2).cuda()\n")
    proc = cli("src", "--output", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    listed = [ln.strip() for ln in proc.stderr.splitlines() if ln.startswith("  ")]
    assert listed and all(ln.startswith(os.path.join("out", "src", "t.py") + ":") for ln in listed), proc.stderr
    migrated = (tmp_path / "out" / "src" / "t.py").read_text().splitlines()
    line = int(listed[0].split(":")[1])
    assert "pycuda" in migrated[line - 1]


def _mutations(text: str, rng: random.Random):
    yield text
    yield text.replace("\n", "\r\n")
    yield "\ufeff" + text
    yield "\x0c\n" + text
    yield text + "# trailing comment without newline"
    yield "# -*- coding: latin-1 -*-\n" + text + 's = "caf\xe9"\n'
    lines = text.splitlines(True)
    for _ in range(4):
        i = rng.randrange(len(lines) + 1)
        yield "".join(lines[:i] + ["    # a comment\n" if rng.random() < .5 else "\x0c\n"] + lines[i:])


def test_bounded_fuzz_of_real_scripts_is_idempotent_and_changes_only_rewritten_lines(tmp_path):
    """Mutations of the project's own CUDA scripts (encodings, BOM, CRLF, form feeds, comments):
    migrating twice gives what migrating once gave, and every line that differs is a rewrite."""
    rng = random.Random(0)
    sources = sorted((REPO / "tests" / "scripts").glob("*.py")) + sorted((REPO / "examples").glob("*.py"))
    n = 0
    for src in sources:
        for text in _mutations(src.read_text(encoding="utf-8"), rng):
            f = tmp_path / f"case{n}.py"
            encoding = "latin-1" if text.startswith("# -*- coding: latin-1") else "utf-8"
            f.write_bytes(text.encode(encoding))
            first = migrate_paths([str(f)], write=True)[0]
            once = f.read_bytes()
            second = migrate_paths([str(f)], write=True)[0]
            assert f.read_bytes() == once and not second.changed, f"not idempotent: {src.name} case {n}"
            if first.changed:
                old = text.replace("\ufeff", "").splitlines()
                new = once.decode(encoding).replace("\ufeff", "").splitlines()
                removed = set(old) - set(new)
                added = set(new) - set(old)
                assert all(("cud" in ln.lower() or "nccl" in ln) for ln in removed), (src.name, n, removed)
                assert all(("npu" in ln or "hccl" in ln or ln.strip().startswith("#")) for ln in added), (src.name, n, added)
            n += 1
    assert n >= 50


def test_a_statement_libcst_does_not_reproduce_is_left_untouched():
    """A backslash continuation on an otherwise empty line: libcst drops it, so positions and the text
    would shift (found by the fuzz campaign: the first run changed nothing but the dropped line).
    Inside a statement to rewrite, the file is left untouched; between statements (libcst only ever
    sees the statements it rewrites) the file is rewritten and the line kept as it was."""
    from ascend_compat.analysis.migrate import MigrateError, migrate_source

    inside = 'import torch\ndef f(y):\n    x = 1\n\\\n    return y.cuda()\n'
    with pytest.raises(MigrateError, match="does not reproduce this file exactly \\(from line 4\\)"):
        migrate_source(inside)
    between = '"""doc"""\n\\\nimport os\nimport torch\nx = y.cuda()\n'
    assert migrate_source(between).code == '"""doc"""\n\\\nimport os\nimport torch\nimport torch_npu\nx = y.npu()\n'


def test_a_bug_met_on_one_file_is_that_files_error(tmp_path, monkeypatch):
    """An exception while migrating one file becomes that file's error (naming it); the other files
    are migrated, nothing is half-written, and with debug=True the exception propagates."""
    from ascend_compat.analysis.migrate import apply

    (tmp_path / "bad.py").write_text(CUDA)
    (tmp_path / "good.py").write_text(CUDA)
    real = apply.migrate_text

    def buggy(path, *args, **kw):
        if path.endswith("bad.py"):
            raise KeyError("boom")
        return real(path, *args, **kw)

    monkeypatch.setattr(apply, "migrate_text", buggy)
    outcomes = {Path(o.path).name: o for o in migrate_paths([str(tmp_path)], write=True)}
    assert "internal error while migrating this file (KeyError" in outcomes["bad.py"].error
    assert (tmp_path / "bad.py").read_text() == CUDA
    assert outcomes["good.py"].changed and ".npu()" in (tmp_path / "good.py").read_text()
    with pytest.raises(KeyError):
        migrate_paths([str(tmp_path / "bad.py")], debug=True)


def test_a_file_that_cannot_be_written_is_reported(tmp_path, monkeypatch):
    """A failed write (here: the disk is full) is the file's error, not an internal error of the run."""
    import errno

    from ascend_compat.analysis.migrate import apply

    def full(path, data, mode=None, **kw):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(apply, "write_bytes_atomic", full)
    (tmp_path / "t.py").write_text(CUDA)
    (out,) = migrate_paths([str(tmp_path / "t.py")], write=True)
    assert out.error.startswith("cannot write") and "No space left" in out.error
    assert not out.changed and not out.changes
    assert (tmp_path / "t.py").read_text() == CUDA


def test_a_killed_write_leaves_a_temporary_file_the_next_run_removes(tmp_path):
    """SIGKILL at the worst moment of ``migrate --write`` (the temporary file written, not yet renamed)
    leaves the original intact and one temporary file; a dry run names it, the next ``--write``
    removes it, says so, and migrates the file; nothing else is left in the directory."""
    import signal

    f = tmp_path / "train.py"
    f.write_text(CUDA)
    killed = subprocess.run([sys.executable, "-c", (
        "import os, signal, sys\n"
        "os.replace = lambda a, b: os.kill(os.getpid(), signal.SIGKILL)\n"
        "from ascend_compat.cli import main\n"
        "sys.exit(main(['migrate', '--write', sys.argv[1]]))\n"), str(f)],
        capture_output=True, text=True, timeout=120, env=clean_env(NO_COLOR="1"))
    assert killed.returncode == -signal.SIGKILL
    assert f.read_text() == CUDA
    (temp,) = [p.name for p in tmp_path.iterdir() if p.name != "train.py"]
    assert temp.startswith(".train.py.ascend-compat-") and temp.endswith(".tmp")
    dry = cli("train.py", cwd=tmp_path)
    assert temp in dry.stderr and (tmp_path / temp).exists()
    again = cli("--write", "train.py", cwd=tmp_path)
    assert again.returncode == 0 and "removed 1 temporary file(s) an interrupted run left" in again.stderr
    assert temp in again.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"] and ".npu()" in f.read_text()


def test_sigterm_during_a_write_leaves_no_temporary_file(tmp_path):
    """SIGTERM ends migrate --write through Python, so the write under way removes its temporary file."""
    import signal

    f = tmp_path / "train.py"
    f.write_text(CUDA)
    proc = subprocess.run([sys.executable, "-c", (
        "import os, signal, sys\n"
        "os.replace = lambda a, b: os.kill(os.getpid(), signal.SIGTERM)\n"
        "from ascend_compat.cli import main\n"
        "sys.exit(main(['migrate', '--write', sys.argv[1]]))\n"), str(f)],
        capture_output=True, text=True, timeout=120, env=clean_env(NO_COLOR="1"))
    assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"] and f.read_text() == CUDA


def test_a_change_is_reported_at_the_line_it_changes():
    """A receiver spanning lines ("foo(\\n  a,\\n).cuda()"): the change is reported at the line of
    .cuda(, where the text changes, not where the expression starts (found by the fuzz campaign on
    pytorch/examples: the oracle saw a line change that no reported change named)."""
    from ascend_compat.analysis.migrate import migrate_source

    src = "import torch\nm = torch.nn.Sequential(\n    torch.nn.ReLU(),\n).cuda()\nok = (m\n      .is_cuda)\n"
    r = migrate_source(src)
    lines = src.splitlines()  # changes count the lines of the file migrated
    by_rule = {c.rule: c.line for c in r.changes}
    assert lines[by_rule["cuda-method"] - 1] == ").cuda()" and lines[by_rule["is-cuda"] - 1].strip() == ".is_cuda)"
