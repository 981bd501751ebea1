"""``ascend-compat doctor``: check torch, torch_npu, CANN, driver, devices and environment variables."""
from __future__ import annotations

import argparse
import json
import sys

HELP = "check this machine's torch / torch_npu / CANN / driver / NPU setup and say how to fix it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    parser.add_argument("--simulate", action="store_true",
                        help="report as if running under the ascend-compat simulator (also: ASCEND_COMPAT_SIMULATE=1)")
    parser.add_argument("--no-import", action="store_true",
                        help="do not try 'import torch_npu' in a child interpreter (metadata checks only)")
    parser.add_argument("--root", default="/", metavar="DIR",
                        help="look for CANN, the driver and the device nodes below DIR instead of / (e.g. a "
                             "mounted container image); Python packages and environment variables are still this "
                             "interpreter's (default: /)")


_STATUS_STYLE = {"OK": "green", "WARN": "yellow", "FAIL": "bold red", "INFO": "cyan"}


def _render_rich(checks, counts) -> None:
    """The text report on a terminal: statuses coloured, details and fixes wrapped to the width."""
    from rich.markup import escape
    from rich.table import Table

    from ascend_compat.cli import _console

    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 1))
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True, style="bold")
    table.add_column(overflow="fold", ratio=1)
    for c in checks:
        status = c.status.value
        detail = escape(c.detail) + (f"\n[dim]fix:[/] {escape(c.fix)}" if c.fix else "")
        table.add_row(f"[{_STATUS_STYLE.get(status, 'bold')}][{status:^4}][/]".replace("[[", "[\\["), c.name, detail)
    out = _console.console(sys.stdout)
    out.print(table)
    out.print()
    out.print(", ".join(f"[{_STATUS_STYLE.get(k, 'bold')}]{n} {k}[/]" for k, n in counts.items()))


def main(args) -> int:
    """Exit 1 if any check FAILs, else 0 (3 when --root is not a directory)."""
    from pathlib import Path

    from ascend_compat.cli import _console
    from ascend_compat.doctor.checks import exit_code, render_text, run_doctor, summary
    from ascend_compat.doctor.environment import Environment

    from ascend_compat.cli._common import INPUT, CliError

    root = Path(args.root)
    if not root.is_dir():
        raise CliError(f"--root {args.root} is not a directory", INPUT)
    env = Environment(root=root, simulate=args.simulate)
    if args.no_import:
        env.import_probe = None
    checks = run_doctor(env)
    if args.format == "json":
        from ascend_compat._schemas import header

        json.dump({**header("doctor"), "checks": [c.to_dict() for c in checks], "summary": summary(checks),
                   "simulated": any(c.name == "simulator" for c in checks)}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif _console.color_wanted(sys.stdout):
        _render_rich(checks, summary(checks))
    else:
        print(render_text(checks))
    return exit_code(checks)
