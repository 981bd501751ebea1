"""Shared helpers for the data generators in ``tools/``: reading torch_npu wheels and JSON output.

A *wheel source* is either a ``torch_npu-<version>-*.whl`` file or a directory named
``torch_npu-<version>`` holding (part of) an unpacked wheel; both give read access to the files
inside by their in-wheel path (``torch_npu/npu/__init__.py``). Nothing is ever imported from a wheel.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import zipfile
from pathlib import Path
from typing import Dict, Iterable, List, Optional

from ascend_compat import _versions
from ascend_compat._versions import Version

_WHEEL_NAME = re.compile(r"^torch_npu-(?P<version>\d+\.\d+(?:\.\d+)?(?:\.?(?:post|rc|a|b)\d+)*)(?:-|$)")


def version_tuple(version: str) -> Version:
    """Sort key for ``2.10.0.post7`` / ``2.1.0rc1`` / ``2.10`` (PEP 440 order: rc < release < post)."""
    return _versions.parse(version)


def minor_key(version: str) -> str:
    """``2.10.0.post7`` -> ``2.10``."""
    return "%d.%d" % _versions.minor(version)


class WheelSource:
    """Read-only access to the files of one torch_npu wheel (zip file or unpacked directory)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        m = _WHEEL_NAME.match(self.path.name)
        if not m:
            raise ValueError(f"{self.path}: name does not look like torch_npu-<version>[-...]")
        self.version = m.group("version")
        self._zip: Optional[zipfile.ZipFile] = None
        if self.path.is_file():
            self._zip = zipfile.ZipFile(self.path)
        # the original wheel file name, if the directory recorded it
        self.wheel_filename = self.path.name
        marker = self.path / "WHEEL_FILENAME"
        if self.path.is_dir() and marker.is_file():
            self.wheel_filename = marker.read_text().strip()

    def read_text(self, inner: str) -> Optional[str]:
        """The file's text, or None if the wheel has no such file."""
        if self._zip is not None:
            try:
                return self._zip.read(inner).decode("utf-8")
            except KeyError:
                return None
        p = self.path / inner
        return p.read_text(encoding="utf-8") if p.is_file() else None

    def names(self) -> List[str]:
        if self._zip is not None:
            return self._zip.namelist()
        return [str(p.relative_to(self.path)) for p in self.path.rglob("*") if p.is_file()]

    def metadata(self) -> Dict[str, List[str]]:
        """The dist-info METADATA headers (multi-valued), e.g. ``{"Requires-Dist": [...]}``."""
        for name in self.names():
            if name.endswith(".dist-info/METADATA"):
                text = self.read_text(name) or ""
                out: Dict[str, List[str]] = {}
                for line in text.split("\n\n", 1)[0].splitlines():
                    if ": " in line and not line.startswith(" "):
                        k, v = line.split(": ", 1)
                        out.setdefault(k, []).append(v.strip())
                return out
        return {}


def find_wheels(wheel_dir: Path) -> Dict[str, WheelSource]:
    """Newest wheel source per minor version key (``"2.5"``) found in ``wheel_dir``.

    Looks at ``*.whl`` files and ``torch_npu-*`` directories, directly in ``wheel_dir`` and in
    ``wheel_dir/extracted``. When a minor version has several, the highest version wins.
    """
    candidates: List[Path] = []
    for d in (wheel_dir, wheel_dir / "extracted"):
        if d.is_dir():
            candidates += [p for p in d.iterdir() if p.name.startswith("torch_npu-")]
    best: Dict[str, WheelSource] = {}
    for p in sorted(candidates):
        if not (p.suffix == ".whl" or p.is_dir()):
            continue
        try:
            src = WheelSource(p)
        except (ValueError, zipfile.BadZipFile) as exc:
            print(f"  skipping {p}: {exc}")
            continue
        key = minor_key(src.version)
        cur = best.get(key)
        # prefer the higher version; on a tie prefer the unpacked directory (cheaper to read)
        if cur is None or version_tuple(src.version) > version_tuple(cur.version) or (
            src.version == cur.version and p.is_dir()
        ):
            best[key] = src
    return best


def write_json(path: Path, data: dict, indent: Optional[int] = 1) -> None:
    """Write ``data`` as sorted, deterministic JSON atomically (temp file + rename)."""
    write_text(path, json.dumps(data, indent=indent, sort_keys=True, ensure_ascii=False) + "\n")


def write_text(path: Path, text: str) -> None:
    """Write ``text`` atomically (temp file + rename), creating the directory; says what it wrote."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=str(path.parent), prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; package data must be world-readable
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    print(f"wrote {path} ({len(text.encode()):,} bytes)")


def git_show(git_dir: Path, ref: str, path: str) -> str:
    """The text of ``path`` at ``ref`` in the git directory ``git_dir`` (a bare clone is enough)."""
    return subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{ref}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def git_describe(git_dir: Path, ref: str) -> str:
    """``"<short sha> (<commit date>)"`` of ``ref``: how the tables name the commit they were read from."""
    return subprocess.run(["git", f"--git-dir={git_dir}", "log", "-1", "--format=%h (%cs)", ref], check=True,
                          capture_output=True, text=True).stdout.strip()


def sorted_unique(items: Iterable[str]) -> List[str]:
    return sorted(set(items))
