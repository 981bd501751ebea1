"""``ascend-compat compare [--simulate] [options] SCRIPT [ARGS...]``.

Runs a script like ``ascend-compat run`` does while every op on the NPU is also run on a host copy
of its inputs and compared (:mod:`ascend_compat.accuracy`). The report names the first op whose
result departs beyond the tolerance for its dtype - with its source line, module, call count and
dtype - then every departure and a table per module.

Exit status: the script's own when it fails; else 1 when a departure was found, 0 when none (so it
can gate CI); usage errors 2, a missing script 3.
"""
from __future__ import annotations

import argparse
import sys

from ascend_compat.cli._common import positive_int

HELP = "run a script with every NPU op mirrored on the CPU and report the first op whose result departs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ascend_compat.cli._script import add_target_arguments

    parser.add_argument("--simulate", action="store_true", help="run on the simulated NPU")
    parser.add_argument("--reference", choices=("float32", "float64"), default="float32",
                        help="precision of the host reference (default float32)")
    parser.add_argument("--tolerance", action="append", type=_tolerance, default=[], metavar="DTYPE=RTOL,ATOL",
                        help="override a dtype's tolerance, e.g. float16=1e-3,1e-4 (repeatable)")
    parser.add_argument("--sample", type=positive_int, default=1, metavar="K", help="compare every K-th op call")
    parser.add_argument("--ops", type=_names, default=None, metavar="OP,...",
                        help="compare only these ops (aten::gelu,aten::mm)")
    parser.add_argument("--modules", type=_names, default=None, metavar="PREFIX,...",
                        help="compare only ops run inside modules with these path prefixes (Model.layers.0)")
    parser.add_argument("--steps", type=positive_int, default=None, metavar="N",
                        help="compare the first N steps only (a step ends at optimizer.step())")
    parser.add_argument("--max-numel", type=positive_int, default=None, metavar="N",
                        help="skip outputs with more than N elements")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    add_target_arguments(parser)


def _tolerance(text: str):
    dtype, sep, numbers = text.partition("=")
    rtol, _, atol = numbers.partition(",")
    try:
        if not sep or dtype not in ("float64", "float32", "float16", "bfloat16"):
            raise ValueError
        return dtype, (float(rtol), float(atol))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: write DTYPE=RTOL,ATOL with DTYPE float64, float32, float16 or bfloat16") from None


def _names(text: str):
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give at least one name")
    return names


def main(args: argparse.Namespace) -> int:
    import os

    from ascend_compat.cli._common import USAGE, CliError

    if args.output is not None and not os.path.isdir(os.path.dirname(os.path.abspath(args.output))):
        raise CliError(f"cannot write {args.output!r}: its directory does not exist", USAGE)
    from ascend_compat.cli._script import parse_target, prepare_with_progress, run_to_status

    target = parse_target(args, prog="compare")
    prepare_with_progress(args, args.simulate)
    from ascend_compat.accuracy.mirror import compare

    comparison = compare(reference=args.reference, tolerances=dict(args.tolerance), sample=args.sample,
                         ops=args.ops, modules=args.modules, steps=args.steps, max_numel=args.max_numel,
                         auto_step=args.steps is not None)
    with comparison:
        code = run_to_status(args.module, target, "compare")
    report = comparison.report("the simulated NPU" if args.simulate else "")
    text = report.json() if args.format == "json" else report.text() + "\n"
    if args.output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        from ascend_compat._files import write_text_atomic

        write_text_atomic(args.output, text)
    if code != 0:
        return code
    return 1 if report.departures else 0
