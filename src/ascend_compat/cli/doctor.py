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
    parser.add_argument("--root", default="/", help=argparse.SUPPRESS)  # inspect another filesystem tree


def main(args) -> int:
    """Exit 1 if any check FAILs, else 0."""
    from pathlib import Path

    from ascend_compat.doctor.checks import exit_code, render_text, run_doctor, summary
    from ascend_compat.doctor.environment import Environment

    root = Path(args.root)
    if not root.is_dir():
        print(f"ascend-compat doctor: --root {args.root} is not a directory", file=sys.stderr)
        return 2
    env = Environment(root=root, simulate=args.simulate)
    if args.no_import:
        env.import_probe = None
    checks = run_doctor(env)
    if args.format == "json":
        json.dump({"checks": [c.to_dict() for c in checks], "summary": summary(checks),
                   "simulated": any(c.name == "simulator" for c in checks)}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render_text(checks))
    return exit_code(checks)
