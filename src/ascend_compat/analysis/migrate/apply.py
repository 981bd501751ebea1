"""Apply :func:`migrate_source` to files and trees: dry-run diff, in-place write, or a migrated copy.

* dry run (default): nothing is written; a unified diff is produced;
* ``write``: each changed file is replaced atomically (temporary file in the same directory, then
  ``os.replace``; the file mode is kept), so a file is either the old or the new version;
* ``output_dir``: a migrated copy of each input tree is written under DIR (unchanged files are
  copied too); nothing is written outside DIR, and DIR may not lie inside an input tree (unless
  excluded there), so a second run never reads its own output.

Files that cannot be read, decoded or parsed are left untouched and reported. Notebooks are
rewritten cell by cell; outputs and metadata are kept.
"""
from __future__ import annotations

import difflib
import json
import os
import shutil
import stat
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from ascend_compat.analysis.findings import Finding
from ascend_compat.analysis.migrate.transform import Change, MigrateError, migrate_source
from ascend_compat._files import write_text_atomic


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


def _read_text(path: str) -> str:
    from ascend_compat.analysis.scan import _decode

    with open(path, "rb") as fh:
        data = fh.read()
    if b"\x00" in data:
        raise MigrateError("binary file (NUL bytes)")
    try:
        return _decode(data)
    except (UnicodeDecodeError, LookupError) as exc:
        raise MigrateError(f"cannot decode: {exc}") from None


def migrate_text(path: str, text: str, kind: str, version=None, annotate=False):
    """(new text, changes, remaining findings) for a Python file or a notebook's JSON text."""
    if kind != "notebook":
        r = migrate_source(text, path, version, annotate)
        return r.code, r.changes, r.remaining
    from ascend_compat.analysis.scan import cell_source, sanitize_cell

    try:
        nb = json.loads(text)
    except ValueError as exc:
        raise MigrateError(f"not valid notebook JSON: {exc}") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise MigrateError("not a Jupyter notebook (no 'cells' list)")
    changes: List[Change] = []
    remaining: List[Finding] = []
    any_change = False
    for idx, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell_source(cell)
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
    """A ``git apply``-able unified diff (marks a missing final newline the way diff does)."""
    out = []
    for line in difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                     fromfile=f"a/{path}", tofile=f"b/{path}"):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _inside(child: str, parent: str) -> bool:
    child, parent = os.path.realpath(child), os.path.realpath(parent)
    return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)


def migrate_paths(paths: Sequence[str], write: bool = False, output_dir: Optional[str] = None,
                  exclude: Sequence[str] = (), annotate: bool = False, torch_npu_version=None,
                  use_gitignore: bool = True) -> List[FileOutcome]:
    """Migrate Python files and notebooks under ``paths`` (see the module docstring for modes)."""
    from ascend_compat.analysis.discover import discover

    if write and output_dir:
        raise MigrateUsageError("--write and --output are exclusive")
    roots = [p for p in paths if os.path.isdir(p)]
    if output_dir:
        for root in paths:
            if _inside(output_dir, root) and os.path.isdir(root):
                rel = os.path.relpath(os.path.realpath(output_dir), os.path.realpath(root))
                from ascend_compat.analysis.discover import IgnoreRules
                rules = IgnoreRules().extended(root, exclude)
                if not rules.ignored(os.path.join(root, rel), True):
                    raise MigrateUsageError(
                        f"output directory {output_dir} is inside the input {root}; choose a directory "
                        f"outside it or exclude it with --exclude {rel}/")
    targets, problems = discover(paths, exclude, use_gitignore)
    outcomes: List[FileOutcome] = []
    for path, kind, msg in problems:
        outcomes.append(FileOutcome(path, error=f"{kind}: {msg}"))
    for t in targets:
        out = FileOutcome(t.path)
        outcomes.append(out)
        dest = None
        if output_dir:
            root = next((r for r in roots if _inside(t.path, r)), None)
            rel = os.path.relpath(t.path, root) if root else os.path.basename(t.path)
            base = os.path.basename(os.path.normpath(root)) if root else ""
            dest = os.path.normpath(os.path.join(output_dir, base, rel))
            if not _inside(dest, output_dir):
                out.error = f"refusing to write outside {output_dir}: {dest}"
                continue
        if t.kind not in ("python", "notebook"):
            if dest:
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                shutil.copy2(t.path, dest)
                out.written_to = dest
            continue
        try:
            text = _read_text(t.path)
            new, changes, remaining = migrate_text(t.path, text, t.kind, torch_npu_version, annotate)
        except (OSError, MigrateError) as exc:
            out.error = str(exc) if isinstance(exc, MigrateError) else f"cannot read: {exc.strerror or exc}"
            if dest:  # the copy must be complete: unmigratable files are copied unchanged
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                shutil.copy2(t.path, dest)
                out.written_to = dest
            continue
        out.changes, out.remaining = changes, remaining
        out.changed = new != text
        if out.changed:
            out.diff = unified_diff(text, new, t.path)
        mode = os.stat(t.path).st_mode
        if write and out.changed:
            write_text_atomic(t.path, new, stat.S_IMODE(mode))
            out.written_to = t.path
        elif dest:
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            write_text_atomic(dest, new, stat.S_IMODE(mode))
            out.written_to = dest
    return outcomes


def changes_table(outcomes: Sequence[FileOutcome], fmt: str) -> str:
    """The change list (file, line, before, after, rule) as JSON or CSV."""
    rows = [c.to_dict() for o in outcomes for c in o.changes]
    if fmt == "json":
        return json.dumps({"schema": "ascend-compat/migrate-changes", "schema_version": "1.0",
                           "changes": rows}, indent=2, ensure_ascii=False) + "\n"
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(("path", "cell", "line", "rule", "before", "after"))
    for r in rows:
        w.writerow((r["path"], r.get("cell", ""), r["line"], r["rule"], r["before"], r["after"]))
    return buf.getvalue()
