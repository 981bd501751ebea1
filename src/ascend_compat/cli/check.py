"""``ascend-compat check PATH...``: report the CUDA-specific code that matters on Ascend (static; never
imports or runs the analysed code).

Exit status: 0 success; 1 ``--fail-on`` threshold reached (a file that could not be analysed counts
as over every threshold); 2 usage error; 3 input error (a given path does not exist, no Python files
found, empty standard input).
"""
from __future__ import annotations

import argparse
import os
import sys

HELP = "find CUDA-specific code and rate how hard the move to Ascend is (static analysis)"
FAIL_LEVELS = {"hard": ("hard",), "moderate": ("moderate", "hard"), "any": ("easy", "moderate", "hard")}
FORMATS = ("text", "concise", "github", "json", "sarif", "csv", "markdown", "html")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ascend_compat.cli._common import jobs, positive_megabytes, torch_npu_version

    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or directories (default: .); '-' reads Python source from standard input")
    parser.add_argument("--format", "-f", choices=FORMATS, default="text",
                        help="text (default), concise (path:line:col: RULE message), github (workflow "
                             "annotations), json, sarif, csv, markdown or html (a per-directory migration plan)")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report here (atomically) instead of stdout")
    parser.add_argument("--fail-on", choices=tuple(FAIL_LEVELS), default=None,
                        help="exit 1 when the overall difficulty is at least this level (any = any finding); "
                             "files that could not be analysed always count")
    parser.add_argument("--select", action="append", default=None, metavar="RULE[,RULE...]",
                        help="report only these rule ids (repeatable; see --list-rules)")
    parser.add_argument("--ignore", action="append", default=None, metavar="RULE[,RULE...]",
                        help="never report these rule ids (repeatable)")
    parser.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                        help="gitignore-style pattern to skip (repeatable)")
    parser.add_argument("--no-gitignore", action="store_true", help="do not honour .gitignore files")
    parser.add_argument("--jobs", "-j", type=jobs, default=0, metavar="N",
                        help="worker processes (default 0: every core)")
    parser.add_argument("--cache", action="store_true",
                        help="reuse results for unchanged files (content hash) from the user cache directory")
    parser.add_argument("--cache-dir", metavar="DIR", help="like --cache, with the cache kept in DIR")
    parser.add_argument("--torch-npu-version", type=torch_npu_version, metavar="VER",
                        help="torch_npu version to check against (default: newest)")
    parser.add_argument("--max-file-size", type=positive_megabytes, default=10.0, metavar="MB",
                        help="skip larger files (default 10)")
    parser.add_argument("--config", metavar="PYPROJECT",
                        help="read [tool.ascend-compat] from this file (default: the nearest pyproject.toml "
                             "above the first PATH that has one)")
    parser.add_argument("--no-config", action="store_true", help="ignore [tool.ascend-compat] in pyproject.toml")
    parser.add_argument("--summary", action="store_true", help="text format: only the summary box")
    parser.add_argument("--list-rules", action="store_true", help="print the rule catalogue and exit")


def _list_rules() -> int:
    from ascend_compat.analysis.rules.catalog import RULES

    for r in RULES.values():
        print(f"{r.id:<22} {r.category:<14} {r.handling:<8} {r.title}")
    return 0


def _rule_ids(values, what: str, allow_empty: bool = False):
    """Split comma-separated ids; a usage error for ids the catalogue does not know."""
    import difflib

    from ascend_compat.analysis.rules.catalog import RULES
    from ascend_compat.cli._common import USAGE, CliError

    if values is None:
        return None
    ids = [p.strip() for v in values for p in v.split(",") if p.strip()]
    if not ids and not allow_empty:
        raise CliError(f"{what}: no rule id given (see ascend-compat check --list-rules)", USAGE)
    for rule in ids:
        if rule not in RULES:
            close = difflib.get_close_matches(rule, list(RULES), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else "; see ascend-compat check --list-rules"
            raise CliError(f"{what}: unknown rule id {rule!r}{hint}", USAGE)
    return ids


def _settings(args):
    """Options merged with ``[tool.ascend-compat]`` (command line wins)."""
    from ascend_compat.cli import _project_config
    from ascend_compat.cli._common import USAGE, CliError, torch_npu_version

    cfg = _project_config.ProjectConfig()
    if args.config:
        if not os.path.isfile(args.config):
            raise CliError(f"--config {args.config}: no such file", USAGE)
        cfg = _project_config.load(args.config)
    elif not args.no_config:
        first = next((p for p in (args.paths or ["."]) if p != "-" and os.path.exists(p)), ".")
        found = _project_config.find(first)
        if found:
            cfg = _project_config.load(found)
    where = f"{cfg.path} [tool.ascend-compat]" if cfg.path else ""
    select = _rule_ids(args.select, "--select")
    if select is None and cfg.select is not None:
        select = _rule_ids(cfg.select, f"{where} select", allow_empty=True)
    ignore = _rule_ids(cfg.ignore, f"{where} ignore", allow_empty=True) + (_rule_ids(args.ignore, "--ignore") or [])
    version = args.torch_npu_version
    if version is None and cfg.torch_npu_version is not None:
        try:
            version = torch_npu_version(cfg.torch_npu_version)
        except argparse.ArgumentTypeError as exc:
            raise CliError(f"{where} torch-npu-version: {exc}", USAGE) from None
    return {"select": select, "ignore": ignore, "version": version,
            "exclude": list(cfg.exclude) + list(args.exclude), "fail_on": args.fail_on or cfg.fail_on}


def _cache_dir(args):
    from ascend_compat.cli._common import USAGE, CliError

    if args.cache_dir:
        if os.path.exists(args.cache_dir) and not os.path.isdir(args.cache_dir):
            raise CliError(f"--cache-dir {args.cache_dir}: exists and is not a directory", USAGE)
        return args.cache_dir
    if args.cache:
        import platformdirs

        return os.path.join(platformdirs.user_cache_dir("ascend-compat", appauthor=False), "check")
    return None


def _check_output(path):
    from ascend_compat.cli._common import USAGE, CliError

    if path is None:
        return
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise CliError(f"--output {path}: directory {directory} does not exist", USAGE)
    if os.path.isdir(path):
        raise CliError(f"--output {path} is a directory; give a file name", USAGE)


def _read_stdin(tmpdir: str, max_bytes: int) -> str:
    from ascend_compat.cli._common import INPUT, USAGE, CliError

    if sys.stdin is None or sys.stdin.isatty():
        raise CliError("'-' reads Python source from standard input: pipe a file in "
                       "(cat train.py | ascend-compat check -)", USAGE)
    data = sys.stdin.buffer.read(max_bytes + 1)  # never more: standard input may not end (cat /dev/zero |)
    if len(data) > max_bytes:
        raise CliError(f"standard input holds more than the {max_bytes / 1e6:.0f} MB limit: not analysed "
                       "(raise it with --max-file-size)", INPUT)
    if not data.strip():
        raise CliError("standard input is empty: no Python code to check", INPUT)
    path = os.path.join(tmpdir, "stdin.py")
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def _scan(args, settings, opts, progress_on):
    """FileResults of everything under the paths; problems with given paths and empty input raise CliError."""
    import tempfile

    from ascend_compat.analysis.discover import discover
    from ascend_compat.analysis.findings import FileResult
    from ascend_compat.analysis.scan import scan_targets
    from ascend_compat.cli import _console
    from ascend_compat.cli._common import INPUT, CliError

    paths = args.paths or ["."]
    with tempfile.TemporaryDirectory(prefix="ascend-compat-stdin-") as tmp:
        stdin_path = _read_stdin(tmp, opts.max_bytes) if "-" in paths else None
        real = [stdin_path if p == "-" else p for p in paths]
        targets, problems = discover(real, settings["exclude"], not args.no_gitignore)
        missing = [p for p, kind, _ in problems if kind == "missing" and p in real]
        if missing and not targets and len(problems) == len(missing):  # nothing to report on: no summary
            raise CliError("; ".join(f"{p}: no such file or directory" for p in missing), INPUT)
        if not targets and not problems:
            where = ", ".join(paths)
            raise CliError(f"no Python files found in {where} (looked for .py, .ipynb, .cu/.cuh, CMake and "
                           "C++ files; excluded and .gitignore'd files are skipped)", INPUT)
        with _console.progress("scanning", "files", progress_on and len(targets) > 1, total=len(targets)) as update:
            results = scan_targets(targets, opts, args.jobs or None, progress=lambda done, total: update(done, total))
        for path, kind, msg in problems:
            results.append(FileResult(path=path, kind="unknown", error=msg, error_kind=kind))
        if stdin_path:
            for r in results:
                if r.path == stdin_path:
                    r.path = "-"
                    for f in r.findings:
                        f.path = "-"
    return results, missing


def _filter(results, select, ignore) -> None:
    for r in results:
        r.findings = [f for f in r.findings
                      if (select is None or f.rule in select) and f.rule not in ignore]


def _render(fmt, report, results, args):
    """The report's text in pieces (a report of a million findings is never held whole)."""
    from ascend_compat.analysis.report import render_chunks

    return render_chunks(fmt, report, summary_only=args.summary,
                         scanned=[r.path for r in results if r.kind != "unknown"])


def main(args) -> int:
    from ascend_compat.analysis.report.schema import build
    from ascend_compat.analysis.scan import ScanOptions
    from ascend_compat.cli import _console
    from ascend_compat.cli._common import FINDINGS, INPUT, OK, CliError, progress_enabled

    if args.list_rules:
        return _list_rules()
    _check_output(args.output)
    settings = _settings(args)
    version = settings["version"]
    if version:
        from ascend_compat import data

        version = data.resolve_version(version)
    opts = ScanOptions(torch_npu_version=version, max_bytes=int(args.max_file_size * 1024 * 1024),
                       cache_dir=_cache_dir(args), debug=bool(getattr(args, "debug", False)))
    results, missing = _scan(args, settings, opts, progress_enabled(args))
    _filter(results, settings["select"], settings["ignore"])
    report = build(results, version, consume=True)
    if args.output:
        from ascend_compat._files import write_text_atomic

        try:
            write_text_atomic(args.output, _render(args.format, report, results, args))
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror or exc}", INPUT) from None
    elif args.format == "text" and _console.color_wanted(sys.stdout):
        from ascend_compat.analysis.report.text import render_rich

        render_rich(report, _console.console(sys.stdout), summary_only=args.summary)
    else:
        for piece in _render(args.format, report, results, args):
            sys.stdout.write(piece)
        sys.stdout.flush()
    errors = report["summary"]["files_with_errors"]
    for path in missing:
        _console.message("error", f"{path}: no such file or directory", prog="ascend-compat check")
    if missing:
        return INPUT
    fail_on = settings["fail_on"]
    if errors and args.format == "text" and not args.output:
        _console.message("warning", f"{errors} file(s) could not be analysed (listed above)"
                         + ("; they count as findings for --fail-on" if fail_on else ""), prog="ascend-compat check")
    if not fail_on:
        return OK
    if errors:
        return FINDINGS
    s = report["summary"]
    if fail_on == "any":
        return FINDINGS if s["total"] else OK
    return FINDINGS if s["difficulty"]["level"] in FAIL_LEVELS[fail_on] else OK
