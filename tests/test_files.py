"""``ascend_compat._files.write_text_atomic``: all or nothing, permissions kept."""
from __future__ import annotations

import os
import stat

import pytest

from ascend_compat._files import write_text_atomic


def test_new_file_gets_umask_permissions_and_exact_text(tmp_path):
    target = tmp_path / "report.txt"
    write_text_atomic(target, "a\r\nb\n")
    assert target.read_bytes() == b"a\r\nb\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


def test_existing_file_keeps_its_mode(tmp_path):
    target = tmp_path / "script.py"
    target.write_text("old")
    target.chmod(0o751)
    write_text_atomic(target, "new")
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o751


def test_failure_leaves_original_and_no_temp_file(tmp_path):
    target = tmp_path / "keep.txt"
    target.write_text("original")
    with pytest.raises(UnicodeEncodeError):
        write_text_atomic(target, "bad \udcff surrogate")
    assert target.read_text() == "original"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temporary_files_name_their_writer_and_stale_ones_are_removed(tmp_path):
    """A write killed between creating its temporary file and the rename leaves
    ``.NAME.ascend-compat-PID-XXXXXXXX.tmp``: stale once PID is gone, then removed by the next write
    of NAME (or remove_leftovers); a live writer's file and other names are left alone."""
    from ascend_compat._files import leftovers, remove_leftovers

    target = tmp_path / "train.py"
    dead = tmp_path / f".train.py.ascend-compat-{_dead_pid()}-abcd1234.tmp"
    live = tmp_path / f".train.py.ascend-compat-{os.getpid()}-zzzz9999.tmp"
    legacy = tmp_path / ".train.py.k2j4h5g1.tmp"   # versions before the PID was in the name
    other = tmp_path / ".other.py.ascend-compat-1-x.tmp"
    for p in (dead, live, legacy, other):
        p.write_text("half a file")
    found = {os.path.basename(x.path): x.stale for x in leftovers(str(tmp_path), {"train.py"})}
    assert found == {dead.name: True, live.name: False, legacy.name: False}
    write_text_atomic(target, "new\n")
    assert not dead.exists() and live.exists() and legacy.exists() and other.exists()
    assert target.read_text() == "new\n"
    assert remove_leftovers(str(tmp_path))["removed"] == []  # the live one is ours, "other" names pid 1
