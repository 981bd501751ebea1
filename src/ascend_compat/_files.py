"""Atomic file writes shared by every command that writes files (check, migrate, audit, caches), and the
one way reports show a source path."""
from __future__ import annotations

import os
import stat
import tempfile
from typing import Optional


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_text_atomic(path: str | os.PathLike, text: str, mode: Optional[int] = None) -> None:
    """Write ``text`` (UTF-8, newlines untouched) to ``path`` so that readers see the old file or the
    new one (see :func:`write_bytes_atomic`)."""
    write_bytes_atomic(path, text.encode("utf-8"), mode)


def write_bytes_atomic(path: str | os.PathLike, data: bytes, mode: Optional[int] = None) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one.

    The data goes to a temporary file in the same directory, which then replaces ``path``. The
    file keeps ``mode`` if given, else the existing file's permissions, else the usual
    permissions of a new file (0666 less the umask). On any error the temporary file is removed
    and the original is untouched.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = _default_mode()
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def display_path(path: str) -> str:
    """``path`` relative to the working directory when it lies below it (as editors want it), else as is."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
