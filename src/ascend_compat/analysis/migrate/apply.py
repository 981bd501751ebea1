"""Apply :func:`migrate_source` to files and trees: dry-run diff, in-place write, or a migrated copy.

* dry run (default): nothing is written; a unified diff is produced;
* ``write``: each changed file is replaced atomically (temporary file in the same directory, then
  ``os.replace``; the file mode is kept), so a file is either the old or the new version;
* ``output_dir``: a migrated copy is written under DIR (a new or empty directory), reproducing the
  tree relative to the common parent of the given paths; every other file of the given directories
  is copied too, so the copy runs. Nothing is written outside DIR, and DIR may not lie inside an
  input tree (unless excluded there), so a second run never reads its own output.

A rewrite keeps the file's encoding (PEP 263 cookie), UTF-8 BOM and CRLF line endings, and is made
only when libcst reproduces the file byte for byte. Files that cannot be read, decoded or parsed, or
are not regular files, or are larger than :data:`MAX_BYTES`, are left untouched and reported; with
``write``, a symbolic link is never replaced (the file it points to is rewritten when it lies inside
the given paths) and nothing is written outside the given paths.
Notebooks are rewritten cell by cell; outputs and metadata are kept.
"""
from __future__ import annotations

import codecs
import difflib
import io
import json
import os
import re
import shutil
import stat
import tokenize
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from ascend_compat.analysis.findings import NOT_A_FILE, Finding, internal_error
from ascend_compat.analysis.migrate.transform import Change, MigrateError, migrate_source
from ascend_compat._files import leftovers, remove_leftovers, write_bytes_atomic


class MigrateUsageError(Exception):
    """Bad arguments (for example an output directory inside the input tree)."""


@dataclass
class FileOutcome:
    path: str
    changed: bool = False
    diff: str = ""
    changes: List[Change] = field(default_factory=list)
    remaining: List[Finding] = field(default_factory=list)
    error: Optional[str] = None
    written_to: Optional[str] = None
    #: why a path that holds no code (a FIFO, socket or device, a broken link) was skipped; never an error
    skipped: Optional[str] = None
    #: temporary files an interrupted write of this file left, removed by this run (``write``)
    leftovers_removed: List[str] = field(default_factory=list)
    #: such files found and kept: a dry run or ``--output`` writes nothing here; a write in progress
    leftovers_kept: List[str] = field(default_factory=list)


#: files larger than this are skipped with a message (libcst needs ~200 bytes of memory per byte)
MAX_BYTES = 4 << 20


@dataclass(frozen=True)
class SourceFormat:
    """How a file's text is stored, so a rewrite is written back the same way."""

    encoding: str = "utf-8"
    bom: bool = False
    crlf: bool = False  # every line ends in \r\n

    def encode(self, text: str) -> bytes:
        if self.crlf:
            text = re.sub(r"(?<!\r)\n", "\r\n", text)
        try:
            data = text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            raise MigrateError(f"the rewrite needs characters {self.encoding} cannot hold ({exc.reason}); "
                               "left untouched") from None
        return (codecs.BOM_UTF8 + data) if self.bom else data


def _read_source(path: str, kind: str):
    """(text, :class:`SourceFormat`) of a regular file; MigrateError for anything that is not one
    (FIFO, device), is too large, binary or undecodable."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise MigrateError("not a regular file (a FIFO, socket or device): skipped")
    if st.st_size > MAX_BYTES:
        raise MigrateError(f"larger than {MAX_BYTES >> 20} MB ({st.st_size >> 20} MB): skipped")
    with open(path, "rb") as fh:
        data = fh.read()
    if b"\x00" in data:
        raise MigrateError("binary file (NUL bytes)")
    bom = data.startswith(codecs.BOM_UTF8)
    body = data[3:] if bom else data
    encoding = "utf-8"
    if kind == "python":
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as exc:
            raise MigrateError(f"cannot decode: {exc}") from None
        encoding = "utf-8" if encoding == "utf-8-sig" else encoding
    try:
        text = body.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise MigrateError(f"cannot decode as {encoding}: {exc}") from None
    crlf = "\r\n" in text and not re.search(r"(?<!\r)\n", text)
    return text, SourceFormat(encoding, bom, crlf)


def migrate_text(path: str, text: str, kind: str, version=None, annotate=False):
    """(new text, changes, remaining findings) for a Python file or a notebook's JSON text."""
    if kind != "notebook":
        r = migrate_source(text, path, version, annotate)  # libcst sees only the rewritten pieces
        return r.code, r.changes, r.remaining
    from ascend_compat.analysis.scan import cell_source, sanitize_cell

    try:
        nb = json.loads(text)
    except ValueError as exc:
        raise MigrateError(f"not valid notebook JSON: {exc}") from None
    except RecursionError:
        raise MigrateError("notebook JSON nested too deeply") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise MigrateError("not a Jupyter notebook (no 'cells' list)")
    changes: List[Change] = []
    remaining: List[Finding] = []
    any_change = False
    for idx, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        try:
            src = cell_source(cell)
        except ValueError as exc:
            remaining.append(Finding(path, 1, 1, 1, 1, "cuda-method", "device", "manual",
                                     f"cell {idx} not migrated: {exc}", "fix the notebook", cell=idx))
            continue
        code = sanitize_cell(src)
        if code is None or code != src:
            continue  # cells with IPython magics are listed, not rewritten (the magic lines are not Python)
        try:
            r = migrate_source(src, path, version, annotate, cell=idx)
        except MigrateError as exc:
            remaining.append(Finding(path, 1, 1, 1, 1, "cuda-method", "device", "manual",
                                     f"cell {idx} not migrated: {exc}", "fix the cell and rerun", cell=idx))
            continue
        changes.extend(r.changes)
        remaining.extend(r.remaining)
        if r.code != src:
            any_change = True
            lines = r.code.splitlines(keepends=True)
            cell["source"] = lines if isinstance(cell.get("source"), list) else r.code
    if not any_change:
        return text, changes, remaining
    indent = 1 if '\n "' in text[:200] else 2
    out = json.dumps(nb, indent=indent, ensure_ascii=False) + ("\n" if text.endswith("\n") else "")
    return out, changes, remaining


def unified_diff(old: str, new: str, path: str) -> str:
    """A ``git apply``-able unified diff (marks a missing final newline the way diff does).

    migrate only replaces lines and inserts some (``import torch_npu``, TODO comments), so the lines
    are aligned in one pass (:func:`_aligned_opcodes`); difflib's matcher took 90 s on 60,000 lines
    with 20,000 rewritten, most of them alike. Anything else falls back to difflib."""
    a, b = old.splitlines(True), new.splitlines(True)
    opcodes = _aligned_opcodes(a, b)
    if opcodes is None:
        matcher = difflib.SequenceMatcher(None, a, b)
        groups = matcher.get_grouped_opcodes(3)
    else:
        groups = _grouped(opcodes, 3)
    out = []
    for k, group in enumerate(groups):
        if k == 0:
            out += [f"--- a/{path}\n", f"+++ b/{path}\n"]
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [" " + x for x in a[a1:a2]]
                continue
            out += ["-" + x for x in a[a1:a2]]
            out += ["+" + x for x in b[b1:b2]]
    return "".join(x if x.endswith("\n") else x + "\n\\ No newline at end of file\n" for x in out)


def _range(start: int, stop: int) -> str:
    """difflib's hunk range: 1-based start and length (start is the line before an empty range)."""
    length = stop - start
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


def _aligned_opcodes(a: List[str], b: List[str], lookahead: int = 16):
    """difflib-style opcodes turning ``a`` into ``b`` when ``b`` is ``a`` with lines replaced and
    lines inserted (at most ``lookahead`` together); None when it is not."""
    ops: list = []

    def add(tag, i1, i2, j1, j2):
        if ops and ops[-1][0] == tag and ops[-1][2] == i1 and ops[-1][4] == j1:
            ops[-1] = (tag, ops[-1][1], i2, ops[-1][3], j2)
        else:
            ops.append((tag, i1, i2, j1, j2))

    i = j = 0
    while i < len(a) and j < len(b):
        if a[i] == b[j]:
            add("equal", i, i + 1, j, j + 1)
            i, j = i + 1, j + 1
            continue
        k = next((k for k in range(1, lookahead + 1) if j + k < len(b) and b[j + k] == a[i]), 0)
        if k:
            add("insert", i, i, j, j + k)
            j += k
        else:
            add("replace", i, i + 1, j, j + 1)
            i, j = i + 1, j + 1
    if i < len(a):
        return None
    if j < len(b):
        add("insert", i, i, j, len(b))
    return ops


def _grouped(opcodes, n: int):
    """Hunks of opcodes with ``n`` lines of context, as difflib's get_grouped_opcodes makes them."""
    codes = list(opcodes) or [("equal", 0, 1, 0, 1)]
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    group = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * n:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def migrate_paths(paths: Sequence[str], write: bool = False, output_dir: Optional[str] = None,
                  exclude: Sequence[str] = (), annotate: bool = False, torch_npu_version=None,
                  use_gitignore: bool = True, progress=None, debug: bool = False) -> List[FileOutcome]:
    """Migrate Python files and notebooks under ``paths`` (see the module docstring for modes);
    ``progress(done, total)`` is called after each file. A bug met on one file becomes that file's
    ``error`` (``debug=True``: it propagates) and the run goes on."""
    from ascend_compat.analysis.discover import discover, given_roots

    if write and output_dir:
        raise MigrateUsageError("--write and --output are exclusive")
    if output_dir:
        _check_output_dir(paths, output_dir, exclude)
    anchor = _anchor(paths)
    real_roots = given_roots(paths)
    targets, problems = discover(paths, exclude, use_gitignore)
    outcomes: List[FileOutcome] = []
    for path, kind, msg in problems:
        outcomes.append(FileOutcome(path, skipped=msg) if kind == NOT_A_FILE
                        else FileOutcome(path, error=f"{kind}: {msg}"))
    done = set()
    found = _leftovers(targets, remove=write)
    for number, t in enumerate(targets, 1):
        if progress is not None:
            progress(number - 1, len(targets))
        out = FileOutcome(t.path)
        outcomes.append(out)
        for item, removed in found.get(os.path.realpath(t.path), ()):
            (out.leftovers_removed if removed else out.leftovers_kept).append(item.path)
        dest = os.path.join(output_dir, os.path.relpath(os.path.abspath(t.path), anchor)) if output_dir else None
        try:
            _migrate_one(t, out, write, dest, real_roots, done, torch_npu_version, annotate)
        except Exception as exc:  # a bug of ours: this file's error, and the run goes on
            if debug:
                raise
            out.error = internal_error(exc, "migrating")
            if out.written_to is None:
                out.changed, out.changes, out.diff = False, [], ""
    if output_dir:
        _copy_the_rest(paths, anchor, output_dir, done, exclude)
    if progress is not None:
        progress(len(targets), len(targets))
    return outcomes


def _leftovers(targets, remove: bool) -> dict:
    """{resolved file: [(Leftover, removed)]}: temporary files that interrupted writes of the
    targets left next to them (found once per directory); removed when ``remove`` and stale."""
    by_dir: dict = {}
    for t in targets:
        if t.kind in ("python", "notebook"):
            real = os.path.realpath(t.path)
            by_dir.setdefault(os.path.dirname(real), set()).add(os.path.basename(real))
    found: dict = {}
    for directory, names in by_dir.items():
        if remove:
            result = remove_leftovers(directory, names)
            items = [(x, True) for x in result["removed"]] + [(x, False) for x in result["kept"]]
        else:
            items = [(x, False) for x in leftovers(directory, names)]
        for item, removed in items:
            found.setdefault(item.target, []).append((item, removed))
    return found


def _migrate_one(t, out: FileOutcome, write: bool, dest: Optional[str], real_roots, done: set,
                 torch_npu_version, annotate: bool) -> None:
    """Migrate one discovered file into ``out`` (see :func:`migrate_paths`)."""
    if t.kind not in ("python", "notebook"):
        if dest:
            _copy(t.path, dest, out, done)
        return
    from ascend_compat.analysis.discover import OUTSIDE, within

    # writes go to the file itself, never through a link out of the given paths (discover does not
    # follow those; checked again here in case a link changed since); a symlink to a file inside
    # them stays a symlink (its target is rewritten, once)
    target = os.path.realpath(t.path) if write else t.path
    if write and not within(target, real_roots):
        out.error = f"outside-link: {OUTSIDE}"
        return
    try:
        text, fmt = _read_source(t.path, t.kind)
        new, changes, remaining = migrate_text(t.path, text, t.kind, torch_npu_version, annotate)
        data = fmt.encode(new) if new != text else None
    except (OSError, MigrateError) as exc:
        out.error = str(exc) if isinstance(exc, MigrateError) else f"cannot read: {exc.strerror or exc}"
        if dest:  # the copy must be complete: unmigratable files are copied unchanged
            _copy(t.path, dest, out, done)
        return
    out.changes, out.remaining = changes, remaining
    out.changed = data is not None
    if out.changed:
        out.diff = unified_diff(text, new, t.path)
    mode = stat.S_IMODE(os.stat(t.path).st_mode)
    try:
        if write and out.changed:
            write_bytes_atomic(target, data, mode, clean=False)
            out.written_to = t.path
        elif dest:
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            if data is None:
                _copy(t.path, dest, out, done)
            else:
                write_bytes_atomic(dest, data, mode)
                out.written_to = dest
                done.add(os.path.abspath(t.path))
    except OSError as exc:
        where = t.path if write else dest
        out.error = f"cannot write {where}: {exc.strerror or exc}; left as it was"
        out.changed, out.changes, out.diff = False, [], ""


def _anchor(paths: Sequence[str]) -> str:
    """The directory the relative tree of ``--output`` starts from: the common parent of the paths
    given, so that a given directory keeps its name in the copy (``proj`` -> ``OUT/proj/...``) and
    files keep their relative places (``a/main.py b/main.py`` -> ``OUT/a/main.py``, ``OUT/b/main.py``)."""
    absolute = [os.path.abspath(p) for p in paths] or [os.getcwd()]
    common = os.path.commonpath(absolute)
    if common in absolute or not os.path.isdir(common):
        return os.path.dirname(common)
    return common


def _check_output_dir(paths: Sequence[str], output_dir: str, exclude: Sequence[str]) -> None:
    from ascend_compat.analysis.discover import within

    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise MigrateUsageError(f"--output {output_dir}: exists and is not a directory")
    if os.path.isdir(output_dir) and os.listdir(output_dir):
        raise MigrateUsageError(f"--output {output_dir}: the directory is not empty; migrate into a new or "
                                "empty directory so nothing is overwritten")
    for root in paths:
        if os.path.isdir(root) and within(os.path.realpath(output_dir), [os.path.realpath(root)]):
            rel = os.path.relpath(os.path.realpath(output_dir), os.path.realpath(root))
            from ascend_compat.analysis.discover import IgnoreRules

            if not IgnoreRules().extended(root, exclude).ignored(os.path.join(root, rel), True):
                raise MigrateUsageError(
                    f"output directory {output_dir} is inside the input {root}; choose a directory "
                    f"outside it or exclude it with --exclude {rel}/")


def _copy(src: str, dest: str, out: FileOutcome, done: set) -> None:
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    if os.path.islink(src):
        os.symlink(os.readlink(src), dest)
    else:
        shutil.copy2(src, dest)
    out.written_to = dest
    done.add(os.path.abspath(src))


def _copy_the_rest(paths: Sequence[str], anchor: str, output_dir: str, done: set, exclude: Sequence[str]) -> None:
    """Every other file of the given directories goes into the copy too, so that it runs (data,
    configs, scripts); version-control and cache directories and the output itself are left out."""
    out_real = os.path.realpath(output_dir)
    skip = {".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
    for root in paths:
        if not os.path.isdir(root):
            continue
        for directory, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in skip
                             and os.path.realpath(os.path.join(directory, d)) != out_real
                             and not os.path.islink(os.path.join(directory, d)))
            for name in sorted(files):
                src = os.path.abspath(os.path.join(directory, name))
                if src in done:
                    continue
                dest = os.path.join(output_dir, os.path.relpath(src, anchor))
                if os.path.lexists(dest):
                    continue
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                if os.path.islink(src):
                    os.symlink(os.readlink(src), dest)
                elif stat.S_ISREG(os.stat(src).st_mode):
                    shutil.copy2(src, dest)
                done.add(src)


def changes_table(outcomes: Sequence[FileOutcome], fmt: str) -> str:
    """The change list (file, line, before, after, rule) as JSON or CSV."""
    from ascend_compat._schemas import header

    rows = [c.to_dict() for o in outcomes for c in o.changes]
    if fmt == "json":
        return json.dumps({**header("migrate-changes"), "changes": rows}, indent=2, ensure_ascii=False) + "\n"
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(("path", "cell", "line", "rule", "before", "after"))
    for r in rows:
        w.writerow((r["path"], r.get("cell", ""), r["line"], r["rule"], r["before"], r["after"]))
    return buf.getvalue()
