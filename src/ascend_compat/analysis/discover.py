"""Find the files ``check``/``migrate`` analyse: files, directory trees, notebooks, build files.

Directories are walked recursively in sorted order. Excluded: ``.gitignore`` patterns found in the
tree (each applying below its own directory, with ``!`` negation, ``/`` anchoring, ``**`` and
trailing ``/`` for directories), ``--exclude`` patterns (same syntax, relative to each given
directory), VCS/cache directories and virtualenvs (a directory holding ``pyvenv.cfg``).
Files given explicitly are never excluded. Directory symlinks are followed once; a symlink that
leads back into its own ancestry is reported as a loop, broken symlinks as unreadable; the walk
never stops on such errors.

Containment, the one rule for what ``check`` and ``migrate`` read and write: a symbolic link met in a
walk is followed only when its target lies inside one of the given paths (resolved); any other
(``up -> ..``, ``data -> /mnt/...``) is reported as ``outside-link`` (the link, never its target)
and nothing behind it is read, written or listed. A path given explicitly is used as given.
"""
from __future__ import annotations

import os
import stat
import re
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Tuple

from ascend_compat.analysis.findings import NOT_A_FILE

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".mypy_cache",
                       ".pytest_cache", ".ruff_cache", "node_modules", ".ipynb_checkpoints", ".eggs"})
CPP_EXT = (".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh")


@dataclass(frozen=True)
class Target:
    path: str
    kind: str  # python / notebook / cuda-source / cmake / cpp


def kind_of(name: str, explicit: bool = False) -> Optional[str]:
    """File kind from its name (None = not analysed). Explicit files without a known suffix are Python."""
    low = name.lower()
    base = os.path.basename(low)
    if low.endswith(".py"):
        return "python"
    if low.endswith(".ipynb"):
        return "notebook"
    if low.endswith((".cu", ".cuh")):
        return "cuda-source"
    if base == "cmakelists.txt" or low.endswith(".cmake"):
        return "cmake"
    if low.endswith(CPP_EXT):
        return "cpp"
    return "python" if explicit else None


def _translate(pattern: str) -> List[str]:
    """The regex of a gitignore pattern, one fragment per token (a character, a class, a wildcard)."""
    out = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            if out[-1:] != [_DIRS]:  # "**/**/" is "**/"
                out.append(_DIRS)
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == n:
            out += [re.escape("/"), _ANY]
            i += 3
        elif pattern.startswith("**", i):
            out.append(_ANY)
            i += 2
            while i < n and pattern[i] == "*":
                i += 1
        elif c == "*":
            if out[-1:] != [_STAR]:  # "**" handled above; "*" after "*" adds nothing
                out.append(_STAR)
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = pattern.find("]", i + 1)
            if j == -1:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1:j].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j + 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return out


#: wildcard fragments: any run without "/", any run, and zero or more whole directories
_STAR, _ANY, _DIRS = "[^/]*", ".*", "(?:.*/)?"


class _Glob:
    """A gitignore pattern with more than two wildcards, matched in time linear in the path per
    token (a regex of such a pattern can backtrack for hours: ``**/`` x 25 or ``a*a*a*...b``)."""

    def __init__(self, fragments: List[str]):
        self.steps = [f if f in (_STAR, _ANY, _DIRS) else re.compile(f, re.S) for f in fragments]

    def match(self, s: str) -> bool:
        n = len(s)
        reach = {0}
        for step in self.steps:
            if not reach:
                return False
            lo = min(reach)
            if step == _ANY:
                reach = set(range(lo, n + 1))
            elif step == _DIRS:
                reach = reach | {i + 1 for i in range(lo, n) if s[i] == "/"}
            elif step == _STAR:
                grown = set()
                for p in sorted(reach):
                    if p in grown:
                        continue
                    q = p
                    while True:
                        grown.add(q)
                        if q == n or s[q] == "/":
                            break
                        q += 1
                reach = grown
            else:
                reach = {p + 1 for p in reach if p < n and step.fullmatch(s[p])}
        return n in reach


def _compile(fragments: List[str]):
    """A matcher of the whole path: a regex for up to two wildcards (at most quadratic), else _Glob."""
    if sum(f in (_STAR, _ANY, _DIRS) for f in fragments) <= 2:
        return re.compile("".join(fragments) + r"\Z", re.S)
    return _Glob(fragments)


class IgnoreRules:
    """Ordered gitignore-style rules; the last matching rule wins."""

    def __init__(self, rules: Sequence[Tuple[str, object, bool, bool]] = ()):
        self.rules = list(rules)

    def extended(self, base: str, lines: Iterable[str]) -> "IgnoreRules":
        """A copy with the patterns in ``lines`` added, relative to directory ``base``."""
        new = list(self.rules)
        for raw in lines:
            line = raw.rstrip("\n").rstrip("\r")
            if not line.strip() or line.startswith("#"):
                continue
            line = line.rstrip(" ") if not line.endswith("\\ ") else line
            negate = line.startswith("!")
            if negate:
                line = line[1:]
            elif line.startswith("\\!") or line.startswith("\\#"):
                line = line[1:]
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            anchored = "/" in line
            line = line.lstrip("/")
            fragments = _translate(line)
            if not anchored and fragments[:1] != [_DIRS]:
                fragments.insert(0, _DIRS)
            new.append((base, _compile(fragments), negate, dir_only))
        return IgnoreRules(new)

    def ignored(self, path: str, is_dir: bool) -> bool:
        result = False
        for base, rx, negate, dir_only in self.rules:
            if dir_only and not is_dir:
                continue
            if base:
                if not path.startswith(base + os.sep):
                    continue
                rel = path[len(base) + 1:]
            else:
                rel = path
            rel = rel.replace(os.sep, "/")
            if rx.match(rel):
                result = not negate
        return result


def _read_gitignore(directory: str, roots: Sequence[str] = ()) -> Optional[List[str]]:
    path = os.path.join(directory, ".gitignore")
    if roots and os.path.islink(path) and not within(os.path.realpath(path), roots):
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().splitlines()
    except OSError:
        return None


#: why a FIFO, socket or device named like a source file is skipped (reading one would block or never end)
NOT_REGULAR = "not a regular file (a FIFO, socket or device): skipped"
#: why a symbolic link out of the given paths is not followed (see the module docstring)
OUTSIDE = "symbolic link to a place outside the given paths: not followed"


def within(real: str, roots: Sequence[str]) -> bool:
    """Whether the resolved path ``real`` is one of the resolved ``roots`` or lies below one."""
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def given_roots(paths: Sequence[str]) -> List[str]:
    """The resolved given paths: what a walk may reach through symbolic links."""
    return [os.path.realpath(p) for p in paths if os.path.exists(p)]


def discover(paths: Sequence[str], exclude: Sequence[str] = (), use_gitignore: bool = True
             ) -> Tuple[List[Target], List[Tuple[str, str, str]]]:
    """Targets to analyse and problems met: ``(path, error_kind, message)`` per unusable path."""
    targets: List[Target] = []
    problems: List[Tuple[str, str, str]] = []
    seen_files = set()
    roots = given_roots(paths)
    for root in paths:
        if not os.path.lexists(root):
            problems.append((root, "missing", "no such file or directory"))
            continue
        if not os.path.exists(root):
            problems.append((root, NOT_A_FILE, "broken symbolic link: skipped"))
            continue
        if not os.path.isdir(root):
            if not stat.S_ISREG(os.stat(root).st_mode):
                problems.append((root, NOT_A_FILE, NOT_REGULAR))
                continue
            real = os.path.realpath(root)
            if real not in seen_files:
                seen_files.add(real)
                targets.append(Target(root, kind_of(root, explicit=True) or "python"))
            continue
        rules = IgnoreRules().extended(root, exclude) if exclude else IgnoreRules()
        _walk(root, rules, use_gitignore, targets, problems, seen_files, roots)
    return targets, problems


def _walk(root, rules, use_gitignore, targets, problems, seen_files, roots) -> None:
    try:
        st = os.stat(root)
    except OSError as exc:
        problems.append((root, "unreadable", exc.strerror or str(exc)))
        return
    stack = [(root, rules, ((st.st_dev, st.st_ino),))]
    while stack:
        directory, rules, ancestry = stack.pop()
        if use_gitignore:
            lines = _read_gitignore(directory, roots)
            if lines:
                rules = rules.extended(directory, lines)
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            problems.append((directory, "unreadable", exc.strerror or str(exc)))
            continue
        subdirs = []
        for e in entries:
            path = e.path
            try:
                is_dir = e.is_dir()  # follows symlinks
            except OSError:
                is_dir = False
            if e.is_symlink():
                if not os.path.exists(path):
                    if kind_of(e.name):
                        problems.append((path, NOT_A_FILE, "broken symbolic link: skipped"))
                    continue
                if not within(os.path.realpath(path), roots):
                    if (is_dir and e.name not in SKIP_DIRS) or kind_of(e.name):
                        if not rules.ignored(path, is_dir):
                            problems.append((path, "outside-link", OUTSIDE))
                    continue
            if is_dir:
                if e.name in SKIP_DIRS or rules.ignored(path, True):
                    continue
                if os.path.exists(os.path.join(path, "pyvenv.cfg")):
                    continue
                try:
                    sst = os.stat(path)
                except OSError as exc:
                    problems.append((path, "unreadable", exc.strerror or str(exc)))
                    continue
                key = (sst.st_dev, sst.st_ino)
                if key in ancestry:
                    problems.append((path, "symlink-loop",
                                     f"symbolic link loop: leads back to {os.path.realpath(path)}"))
                    continue
                subdirs.append((path, rules, ancestry + (key,)))
                continue
            kind = kind_of(e.name)
            if kind is None or rules.ignored(path, False):
                continue
            try:
                regular = e.is_file()  # follows symlinks; False for FIFOs, sockets, devices
            except OSError:
                regular = False
            if not regular:
                problems.append((path, NOT_A_FILE, NOT_REGULAR))
                continue
            real = os.path.realpath(path)
            if real in seen_files:
                continue
            seen_files.add(real)
            targets.append(Target(path, kind))
        stack.extend(reversed(subdirs))
