"""``ascend-compat error``: explain Ascend error codes, or every code and known failure in a log."""
from __future__ import annotations

import argparse
import json
import sys

HELP = "explain Ascend error codes (507035, EZ9999, ERR00100...) or scan a log with --log FILE"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("codes", nargs="*", metavar="CODE",
                        help="numeric ACL/runtime/aclnn/HCCL code, CANN E-code (EZ9999) or torch_npu code (ERR01100)")
    parser.add_argument("--log", metavar="FILE",
                        help="scan a whole log or traceback ('-' reads standard input) and explain everything found")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")


def _print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def main(args) -> int:
    """Exit codes: 0 = explained; 1 = a log had nothing recognisable; 2 = a CODE that is not a code
    (the valid ones are still explained); 3 = the log is missing, unreadable, compressed or binary."""
    from ascend_compat.cli import _console
    from ascend_compat.cli._common import FINDINGS, INPUT, OK, USAGE, CliError, progress_enabled
    from ascend_compat.errors.explain import explain

    if not args.codes and not args.log:
        raise CliError("give one or more codes (e.g. 507035 EZ9999) or --log FILE", USAGE)
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
        from ascend_compat._schemas import header

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
