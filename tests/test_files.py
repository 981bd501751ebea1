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
