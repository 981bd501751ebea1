"""``ascend-compat check PATH...``: report the CUDA-specific code that matters on Ascend (static; never
imports or runs the analysed code)."""
from __future__ import annotations

import argparse
import sys

HELP = "find CUDA-specific code and rate how hard the move to Ascend is (static analysis)"
FAIL_LEVELS = {"hard": ("hard",), "moderate": ("moderate", "hard"), "any": ("easy", "moderate", "hard")}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or directories (default: .)")
    parser.add_argument("--format", "-f", choices=("text", "json", "sarif", "csv"), default="text")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report here (atomically) instead of stdout")
    parser.add_argument("--fail-on", choices=tuple(FAIL_LEVELS), metavar="{hard,moderate,any}",
                        help="exit 1 when the overall difficulty is at least this level (any = any finding)")
    parser.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                        help="gitignore-style pattern to skip (repeatable)")
    parser.add_argument("--no-gitignore", action="store_true", help="do not honour .gitignore files")
    parser.add_argument("--jobs", "-j", type=int, default=0, help="worker processes (default: all cores)")
    parser.add_argument("--cache", nargs="?", const="", default=None, metavar="DIR",
                        help="reuse results for unchanged files (content hash); DIR defaults to the user cache dir")
    parser.add_argument("--torch-npu-version", metavar="VER", help="torch_npu version to check against (default: newest)")
    parser.add_argument("--max-file-size", type=float, default=10.0, metavar="MB", help="skip larger files (default 10)")
    parser.add_argument("--summary", action="store_true", help="text format: only the summary box")
    parser.add_argument("--list-rules", action="store_true", help="print the rule catalogue and exit")


def _progress_printer():
    if not sys.stderr.isatty():
        return None
    state = {"last": -1}

    def show(done: int, total: int) -> None:
        if total < 200:
            return
        pct = done * 100 // total
        if pct == state["last"] and done != total:
            return
        state["last"] = pct
        bar = "█" * (pct * 30 // 100) + "░" * (30 - pct * 30 // 100)
        sys.stderr.write(f"\r  scanning {bar} {pct:3d}% ({done}/{total} files)")
        if done == total:
            sys.stderr.write("\r" + " " * 70 + "\r")
        sys.stderr.flush()
    return show


def main(args) -> int:
    from ascend_compat.analysis.report import render
    from ascend_compat.analysis.report.schema import build
    from ascend_compat.analysis.scan import ScanOptions, default_cache_dir, scan_paths

    if args.list_rules:
        from ascend_compat.analysis.rules.catalog import RULES
        for r in RULES.values():
            print(f"{r.id:<22} {r.category:<14} {r.handling:<8} {r.title}")
        return 0
    version = args.torch_npu_version
    if version:
        try:
            from ascend_compat import data
            version = data.resolve_version(version)
        except (ImportError, AttributeError):
            pass
        except (KeyError, ValueError) as exc:
            print(f"ascend-compat check: unknown torch_npu version {args.torch_npu_version!r}: {exc}", file=sys.stderr)
            return 2
    cache = None
    if args.cache is not None:
        cache = args.cache or default_cache_dir()
    opts = ScanOptions(torch_npu_version=version, max_bytes=int(args.max_file_size * 1024 * 1024), cache_dir=cache)
    paths = args.paths or ["."]
    result = scan_paths(paths, exclude=args.exclude, opts=opts, jobs=args.jobs or None,
                        use_gitignore=not args.no_gitignore, progress=_progress_printer())
    report = build(result.files, version)
    text = render(args.format, report, summary_only=args.summary)
    if args.output:
        try:
            from ascend_compat._files import write_text_atomic

            write_text_atomic(args.output, text)
        except OSError as exc:
            print(f"ascend-compat check: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    if args.fail_on:
        s = report["summary"]
        if args.fail_on == "any":
            return 1 if s["total"] else 0
        return 1 if s["difficulty"]["level"] in FAIL_LEVELS[args.fail_on] else 0
    return 0
