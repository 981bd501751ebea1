"""``ascend-compat migrate PATH...``: rewrite CUDA code for Ascend (dry-run diff by default).

Exit status: 0 success; 1 some file could not be rewritten (unreadable, undecodable or unparsable:
left untouched and listed); 2 usage error; 3 input error (a given path does not exist, no Python
files found). A path that holds no code (a FIFO, socket or device, a broken link) is listed as skipped
and does not change the status (docs/cli.md, "Files left untouched").
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

HELP = "rewrite CUDA-specific code for Ascend (prints a diff; --write or --output to apply)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ascend_compat.cli._common import torch_npu_version

    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", "-w", action="store_true", help="rewrite the files in place (atomically)")
    mode.add_argument("--output", "-o", metavar="DIR", help="write a migrated copy of the inputs under DIR")
    parser.add_argument("--annotate", action="store_true",
                        help="add '# TODO(ascend-compat): ...' above what cannot be rewritten")
    parser.add_argument("--changes", metavar="FILE", help="write the change list here (.json or .csv)")
    parser.add_argument("--changes-format", choices=("json", "csv"), help="default: from the FILE suffix")
    parser.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                        help="gitignore-style pattern to skip (repeatable)")
    parser.add_argument("--no-gitignore", action="store_true", help="do not honour .gitignore files")
    parser.add_argument("--torch-npu-version", type=torch_npu_version, metavar="VER", help="torch_npu version whose API decides torch.cuda rewrites")
    parser.add_argument("--quiet", "-q", action="store_true", help="no diff, only the summary")


def _targets(args):
    """Discovered files; missing paths and an empty selection raise CliError (input error)."""
    from ascend_compat.analysis.discover import discover
    from ascend_compat.cli._common import INPUT, CliError

    for p in args.paths:
        if not os.path.lexists(p):
            raise CliError(f"{p}: no such file or directory", INPUT)
    targets, problems = discover(args.paths, args.exclude, not args.no_gitignore)
    if not any(t.kind in ("python", "notebook") for t in targets) and not problems:
        raise CliError(f"no Python files found in {', '.join(args.paths)}", INPUT)
    return targets


def _migrate(args, targets, migrate_paths):
    """Outcomes of one call over all the paths (so the given roots bound symlinks and every path
    problem is reported), with per-file progress."""
    from ascend_compat.cli import _console
    from ascend_compat.cli._common import progress_enabled

    files = [t for t in targets if t.kind in ("python", "notebook")]
    with _console.progress("migrating", "files", progress_enabled(args) and len(files) > 1,
                           total=len(targets)) as update:
        return migrate_paths(args.paths, write=args.write, output_dir=args.output, exclude=args.exclude,
                             annotate=args.annotate, torch_npu_version=args.torch_npu_version,
                             use_gitignore=not args.no_gitignore, progress=lambda done, total: update(done),
                             debug=bool(getattr(args, "debug", False)))


def _terminated(signum, frame):
    raise SystemExit(128 + signum)


_DIFF_STYLE = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))


def _print_coloured_diff(diff: str) -> None:
    from rich.text import Text

    from ascend_compat.cli import _console

    out = _console.console(sys.stdout)
    for line in diff.rstrip("\n").split("\n"):
        style = next((st for prefix, st in _DIFF_STYLE if line.startswith(prefix)), "")
        out.print(Text(line, style=style), soft_wrap=True)


def main(args) -> int:
    from ascend_compat._files import write_text_atomic
    from ascend_compat.analysis.migrate.apply import MigrateUsageError, changes_table, migrate_paths
    from ascend_compat.cli import _console
    from ascend_compat.cli._common import FINDINGS, INPUT, INTERNAL, OK, USAGE, CliError

    try:  # a base dependency: missing only from a broken environment
        import libcst  # noqa: F401
    except ImportError:
        raise CliError("libcst is missing from this environment although ascend-compat depends on it; "
                       "reinstall: pip install 'libcst>=1.1'", INTERNAL) from None
    if args.changes and not os.path.isdir(os.path.dirname(os.path.abspath(args.changes))):
        raise CliError(f"--changes {args.changes}: its directory does not exist", USAGE)
    if (args.write or args.output) and threading.current_thread() is threading.main_thread():
        # SIGTERM ends the run through Python, so a write under way removes its temporary file
        signal.signal(signal.SIGTERM, _terminated)
    targets = _targets(args)
    try:
        outcomes = _migrate(args, targets, migrate_paths)
    except MigrateUsageError as exc:
        raise CliError(str(exc), USAGE) from None
    out = sys.stdout
    if not args.quiet and not args.write and not args.output:
        diff = "".join(o.diff for o in outcomes if o.diff)
        if diff and _console.color_wanted(out):
            _print_coloured_diff(diff)
        else:
            out.write(diff)
            out.flush()
    changed = [o for o in outcomes if o.changed]
    errors = [o for o in outcomes if o.error]
    # the findings' lines are those of the migrated text: name the file that has them
    remaining = [(o.written_to or o.path, f) for o in outcomes for f in o.remaining if f.handling != "auto"]
    err = sys.stderr
    n_changes = sum(len(o.changes) for o in outcomes)
    verb = "rewrote" if args.write else ("wrote a migrated copy to " + args.output + ":" if args.output else "would change")
    err.write(f"ascend-compat migrate: {verb} {len(changed)} file(s), {n_changes} change(s)\n")
    if remaining:
        lines_of = "" if (args.write or args.output) else "; line numbers after migration"
        err.write(f"not rewritten, needs attention ({len(remaining)}{lines_of}):\n")
        for path, f in remaining:
            where = (f"cell {f.cell} " if f.cell is not None else "") + f"{f.line}"
            err.write(f"  {path}:{where}: [{f.rule}] {f.handling}: {f.suggestion}\n")
    removed = [p for o in outcomes for p in o.leftovers_removed]
    kept = [p for o in outcomes for p in o.leftovers_kept]
    if removed:
        err.write(f"removed {len(removed)} temporary file(s) an interrupted run left:\n")
        err.writelines(f"  {p}\n" for p in removed)
    if kept:
        err.write(f"temporary file(s) of an unfinished write ({len(kept)}; migrate --write removes those "
                  "whose process is gone, remove others by hand once no migrate runs):\n")
        err.writelines(f"  {p}\n" for p in kept)
    if errors:
        err.write(f"left untouched ({len(errors)}):\n")
        for o in errors:
            err.write(f"  {o.path}: {o.error}\n")
    skipped = [o for o in outcomes if o.skipped]
    if skipped:  # no code in them: listed, never an error (docs/cli.md, "Files left untouched")
        err.write(f"skipped, not files ({len(skipped)}):\n")
        for o in skipped:
            err.write(f"  {o.path}: {o.skipped}\n")
    if args.changes:
        fmt = args.changes_format or ("csv" if args.changes.lower().endswith(".csv") else "json")
        try:
            write_text_atomic(args.changes, changes_table(outcomes, fmt))
        except OSError as exc:
            raise CliError(f"cannot write {args.changes}: {exc.strerror or exc}", INPUT) from None
    return FINDINGS if errors else OK
