"""``ascend-compat error``: explain Ascend error codes, or every code and known failure in a log."""
from __future__ import annotations

import argparse
import json
import os
import sys

from ascend_compat._schemas import header

HELP = ("explain Ascend error codes (507035, EZ9999, ERR00100...), scan a log with --log FILE, or find the rank "
        "that broke a job with --log DIR (or several files)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("codes", nargs="*", metavar="CODE",
                        help="numeric ACL/runtime/aclnn/HCCL code, CANN E-code (EZ9999) or torch_npu code (ERR01100)")
    parser.add_argument("--log", metavar="PATH", nargs="+",
                        help="one FILE: scan a whole log or traceback ('-' reads standard input) and explain everything "
                             "found; a DIR or several files: a job's logs (plogs, torchrun's per-rank logs, launcher "
                             "output, a directory per node), read together to name the rank that broke the job and "
                             "the ranks that failed because of it")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")


def _print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def _job(args, paths) -> int:
    """``--log DIR`` / several files: the cross-rank diagnosis."""
    import os

    from ascend_compat.cli import _console
    from ascend_compat.cli._common import FINDINGS, INPUT, OK, CliError, progress_enabled
    from ascend_compat.errors.crossrank import diagnose_paths
    from ascend_compat.errors.crossrank.report import to_dict, to_text

    if "-" in paths:
        raise CliError("standard input ('-') can only be read alone: --log - ", INPUT)
    for path in paths:
        if not os.path.exists(path):
            raise CliError(f"{path}: no such file or directory", INPUT)
    try:
        with _console.progress("reading the job's logs", "files", progress_enabled(args)) as update:
            diagnosis = diagnose_paths(paths, progress=update)
    except OSError as exc:
        raise CliError(f"cannot read the logs: {exc}", INPUT) from None
    if not diagnosis.files:
        raise CliError(f"no log files in {', '.join(paths)}", INPUT)
    if args.format == "json":
        _print_json({**header("error"), "codes": [], "errors": [],
                     "job": {"sources": list(paths), **to_dict(diagnosis)}})
    else:
        _console.write_report(to_text(diagnosis, ", ".join(paths)) + "\n")
    return OK if diagnosis.root is not None or diagnosis.consequences else FINDINGS


def main(args) -> int:
    """Exit codes: 0 = explained; 1 = a log had nothing recognisable; 2 = a CODE that is not a code
    (the valid ones are still explained); 3 = the log is missing, unreadable, compressed or binary."""
    from ascend_compat.cli import _console
    from ascend_compat.cli._common import FINDINGS, INPUT, OK, USAGE, CliError, progress_enabled
    from ascend_compat.errors.explain import explain

    if not args.codes and not args.log:
        raise CliError("give one or more codes (e.g. 507035 EZ9999) or --log FILE", USAGE)
    paths = args.log or []
    if len(paths) > 1 or (paths and paths[0] != "-" and os.path.isdir(paths[0])):
        if args.codes:
            raise CliError("explain codes or diagnose a job's logs, not both in one call", USAGE)
        return _job(args, paths)
    args.log = paths[0] if paths else None
    explained, bad = [], []
    for code in args.codes:
        try:
            explained.append(explain(code))
        except ValueError as exc:
            bad.append(str(exc))
    findings = None
    if args.log:
        from ascend_compat.errors.logscan import LogReadError, scan_log

        try:
            with _console.progress("scanning log", "bytes", progress_enabled(args) and args.log != "-") as update:
                findings = scan_log(args.log, progress=update)
        except LogReadError as exc:
            raise CliError(str(exc), INPUT) from None
    if args.format == "json":
        out = {**header("error"), "codes": [e.to_dict() for e in explained], "errors": bad}
        if findings is not None:
            out["log"] = {"source": args.log, "findings": [f.to_dict() for f in findings]}
        _print_json(out)
    else:
        blocks = [e.to_text() for e in explained]
        if findings is not None:
            where = "standard input" if args.log == "-" else args.log
            if findings:
                blocks.append(f"{len(findings)} finding(s) in {where}:")
                blocks.extend(f.to_text() for f in findings)
            else:
                blocks.append(f"no Ascend error code or known failure pattern found in {where}")
        if blocks:
            _console.write_report("\n\n".join(blocks) + "\n")
        for msg in bad:
            _console.message("error", msg, prog="ascend-compat error")
    if bad:
        return USAGE
    if findings is not None and not findings and not explained:
        return FINDINGS
    return OK
