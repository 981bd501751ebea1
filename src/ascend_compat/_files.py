"""Atomic file writes shared by every command that writes files (check, migrate, audit, caches), and the
one way reports show a source path.

A write goes to a temporary file next to its target, ``.NAME.ascend-compat-PID-XXXXXXXX.tmp``, which
then replaces ``NAME``. A process killed in between (SIGKILL, power loss) leaves that temporary file
behind; the name says whose it is, so the next run can tell a leftover (its process is gone) from a
write in progress: :func:`leftovers` finds them, :func:`remove_leftovers` removes them, and every
write of ``NAME`` removes the leftovers of earlier writes of ``NAME``.
"""
from __future__ import annotations

import os
import re
import stat
import tempfile
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional

_MARK = "ascend-compat"
#: our temporary files, and those of versions before the PID was in the name (named, never removed)
_TEMP = re.compile(r"\.(?P<name>.+)\.(?:" + _MARK + r"-(?P<pid>\d+)-[a-z0-9_]+|(?P<legacy>[a-z0-9_]{8}))\.tmp\Z")


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_text_atomic(path: str | os.PathLike, text: str | Iterable[str], mode: Optional[int] = None) -> None:
    """Write ``text`` (UTF-8, newlines untouched; a string or pieces of one, written as they come, so a
    large report never exists whole in memory) to ``path`` so that readers see the old file or the new
    one (see :func:`write_bytes_atomic`)."""
    if isinstance(text, str):
        write_bytes_atomic(path, text.encode("utf-8"), mode)
    else:
        write_bytes_atomic(path, (piece.encode("utf-8") for piece in text), mode)


def write_bytes_atomic(path: str | os.PathLike, data: bytes | Iterable[bytes], mode: Optional[int] = None,
                       clean: bool = True) -> None:
    """Write ``data`` (bytes, or pieces of them written as they come) to ``path`` so that readers see
    the old file or the new one.

    The data goes to a temporary file in the same directory, which then replaces ``path``. The
    file keeps ``mode`` if given, else the existing file's permissions, else the usual
    permissions of a new file (0666 less the umask). On any error the temporary file is removed
    and the original is untouched. With ``clean`` (default), leftovers of interrupted earlier
    writes of ``path`` are removed afterwards (a caller writing many files of one directory passes
    False and calls :func:`remove_leftovers` once per directory instead).
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = _default_mode()
    prefix = f".{os.path.basename(path)}.{_MARK}-{os.getpid()}-"
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, (bytes, bytearray, memoryview)):
                fh.write(data)
            else:
                for piece in data:
                    fh.write(piece)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if clean:
        remove_leftovers(directory, {os.path.basename(path)})


@dataclass(frozen=True)
class Leftover:
    """A temporary file of an atomic write that was not finished."""

    path: str
    #: the file it was to replace
    target: str
    #: the writing process is gone (this host), so the file is debris; False: a write in progress,
    #: or a file named like those of versions before the PID was in the name (never removed)
    stale: bool


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: someone else's live process
        return True
    return True


def leftovers(directory: str, names: Optional[set] = None) -> List[Leftover]:
    """Temporary files of unfinished atomic writes in ``directory`` (only of the files ``names``, if given)."""
    out = []
    try:
        with os.scandir(directory) as it:
            entries = [e.name for e in it if e.name.endswith(".tmp") and e.name.startswith(".")]
    except OSError:
        return out
    for entry in sorted(entries):
        m = _TEMP.match(entry)
        if m is None or (names is not None and m.group("name") not in names):
            continue
        stale = m.group("pid") is not None and not _alive(int(m.group("pid")))
        out.append(Leftover(os.path.join(directory, entry), os.path.join(directory, m.group("name")), stale))
    return out


def remove_leftovers(directory: str, names: Optional[set] = None) -> Dict[str, List[Leftover]]:
    """Remove the stale :func:`leftovers` of ``directory``; returns ``{"removed": [...], "kept": [...]}``
    (kept: writes in progress, legacy names, and files that could not be removed)."""
    removed, kept = [], []
    for item in leftovers(directory, names):
        if item.stale:
            try:
                os.unlink(item.path)
                removed.append(item)
                continue
            except OSError:
                pass
        kept.append(item)
    return {"removed": removed, "kept": kept}


def display_path(path: str) -> str:
    """``path`` relative to the working directory when it lies below it (as editors want it), else as is."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
