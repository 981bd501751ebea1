"""``ascend-compat plan [--devices N] [--steps N] [--soc NAME] SCRIPT [ARGS...]`` (or ``-m MODULE``).

Plans the script at its real size without the hardware: per rank peak allocated/reserved memory with
torch_npu's caching-allocator semantics, where the peak is and what is live there, whether it fits the
SoC (else torch_npu's OOM message and what would make it fit), a roofline step time and MFU. ``--format
json`` for tools, ``--html FILE`` for the memory timeline, ``--find-max-batch ARG`` for the largest
value of the script's own batch argument that fits. Exit status: 0 fits (or the search found a
value), 1 does not fit or the script failed, 2 usage (unknown SoC, a batch argument the script does not
take), 3 input (no such script).
"""
from __future__ import annotations

import argparse
import sys

HELP = "plan a full-size run without the hardware: memory per rank, fit, OOM, step time"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ascend_compat.cli._common import positive_int
    from ascend_compat.cli.run import _device_count

    parser.add_argument("--devices", type=_device_count, default=1, metavar="N",
                        help="number of ranks (the script's world size, as torchrun --nproc_per_node)")
    parser.add_argument("--steps", type=positive_int, default=2, metavar="N",
                        help="optimizer steps to plan (default 2: the second is the steady state)")
    parser.add_argument("--soc", default=None, metavar="NAME", help="Ascend SoC (default Ascend910B3)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--html", metavar="FILE", help="write the memory timeline as an HTML page")
    parser.add_argument("--find-max-batch", metavar="ARG",
                        help="search the largest value of the script's argument ARG that fits (batch-size means "
                             "--batch-size; or --find-max-batch=--batch-size)")
    parser.add_argument("--ranks", choices=("edges", "all"), default="edges",
                        help="plan rank 0 and the last rank (default) or every rank")
    parser.add_argument("--timeout", type=positive_int, default=1800, metavar="S", help="per planned rank")
    from ascend_compat.cli._script import add_target_arguments

    add_target_arguments(parser)


def main(args: argparse.Namespace) -> int:
    from ascend_compat.cli._common import USAGE, CliError, progress_enabled
    from ascend_compat.cli._script import parse_target
    from ascend_compat import plan as planning

    target = parse_target(args, prog="plan")
    try:
        soc = planning.check_soc(args.soc)
    except planning.PlanError as exc:
        raise CliError(str(exc), USAGE) from None
    progress = progress_enabled(args)
    options = dict(module=args.module, devices=args.devices, steps=args.steps, soc=soc, ranks=args.ranks,
                   progress=progress, timeout=args.timeout)
    try:
        if args.find_max_batch:
            return _find_max_batch(args, target, options)
        result = planning.plan(target, **options)
    except planning.PlanError as exc:
        raise CliError(str(exc), exc.code) from None
    _emit(args, result)
    return 0 if result.fits else 1


def _emit(args, result) -> None:
    from ascend_compat.plan import report

    if args.html:
        from ascend_compat._files import write_text_atomic

        write_text_atomic(args.html, report.timeline_html(result))
    if args.format == "json":
        sys.stdout.write(result.to_json(timeline=False) + "\n")
    else:
        sys.stdout.write(report.text(result))


def _find_max_batch(args, target, options) -> int:
    from ascend_compat import plan as planning
    from ascend_compat.cli._common import USAGE, CliError
    from ascend_compat.plan.search import BatchArgumentError, find_max_batch

    if not args.find_max_batch.startswith("-"):
        args.find_max_batch = "--" + args.find_max_batch
    try:
        best, result, tried = find_max_batch(target, args.find_max_batch, options,
                                             progress=options["progress"])
    except BatchArgumentError as exc:
        raise CliError(str(exc), USAGE) from None
    except planning.PlanError as exc:
        raise CliError(str(exc), exc.code) from None
    if args.format == "json":
        import json

        out = result.to_dict(timeline=False) if result is not None else {}
        out.update(max_batch=best, argument=args.find_max_batch, tried=tried)
        sys.stdout.write(json.dumps(out, indent=1) + "\n")
    else:
        tries = ", ".join(f"{v} {'fits' if ok else 'OOM'}" for v, ok in tried)
        if best is None:
            sys.stdout.write(f"no value of {args.find_max_batch} fits (tried {tries})\n")
        else:
            sys.stdout.write(f"largest {args.find_max_batch} that fits: {best} (tried {tries})\n")
            sys.stdout.write(_indent(__import__("ascend_compat.plan.report", fromlist=["text"]).text(result)))
    if args.html and result is not None:
        from ascend_compat._files import write_text_atomic
        from ascend_compat.plan import report

        write_text_atomic(args.html, report.timeline_html(result))
    return 0 if best is not None else 1


def _indent(text: str) -> str:
    return "".join("  " + line + "\n" for line in text.splitlines())
