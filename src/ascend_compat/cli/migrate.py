"""``ascend-compat migrate PATH...``: rewrite CUDA code for Ascend (dry-run diff by default)."""
from __future__ import annotations

import argparse
import sys

HELP = "rewrite CUDA-specific code for Ascend (prints a diff; --write or --output to apply)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument("--torch-npu-version", metavar="VER", help="torch_npu version whose API decides torch.cuda rewrites")
    parser.add_argument("--quiet", "-q", action="store_true", help="no diff, only the summary")


def main(args) -> int:
    try:
        import libcst  # noqa: F401
    except ImportError:
        print("ascend-compat migrate: libcst is not installed.\n"
              "  install it with: pip install 'ascend-compat[migrate]'   (check works without it)", file=sys.stderr)
        return 2
    from ascend_compat.analysis.migrate.apply import MigrateUsageError, changes_table, migrate_paths
    from ascend_compat._files import write_text_atomic

    try:
        outcomes = migrate_paths(args.paths, write=args.write, output_dir=args.output, exclude=args.exclude,
                                 annotate=args.annotate, torch_npu_version=args.torch_npu_version,
                                 use_gitignore=not args.no_gitignore)
    except MigrateUsageError as exc:
        print(f"ascend-compat migrate: {exc}", file=sys.stderr)
        return 2
    out = sys.stdout
    if not args.quiet and not args.write and not args.output:
        for o in outcomes:
            if o.diff:
                out.write(o.diff)
    changed = [o for o in outcomes if o.changed]
    errors = [o for o in outcomes if o.error]
    remaining = [(o.path, f) for o in outcomes for f in o.remaining if f.handling != "auto"]
    err = sys.stderr
    n_changes = sum(len(o.changes) for o in outcomes)
    verb = "rewrote" if args.write else ("wrote a migrated copy to " + args.output + ":" if args.output else "would change")
    err.write(f"ascend-compat migrate: {verb} {len(changed)} file(s), {n_changes} change(s)\n")
    if remaining:
        err.write(f"not rewritten, needs attention ({len(remaining)}):\n")
        for path, f in remaining:
            where = (f"cell {f.cell} " if f.cell is not None else "") + f"{f.line}"
            err.write(f"  {path}:{where}: [{f.rule}] {f.handling}: {f.suggestion}\n")
    if errors:
        err.write(f"left untouched ({len(errors)}):\n")
        for o in errors:
            err.write(f"  {o.path}: {o.error}\n")
    if args.changes:
        fmt = args.changes_format or ("csv" if args.changes.lower().endswith(".csv") else "json")
        try:
            write_text_atomic(args.changes, changes_table(outcomes, fmt))
        except OSError as exc:
            print(f"ascend-compat migrate: cannot write {args.changes}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    return 0
