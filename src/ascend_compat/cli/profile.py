"""``ascend-compat profile [--simulate] [--steps N] [--warmup W] [--phases P,...] [--timeout S] SCRIPT [ARGS...]``.

Runs a training script like ``ascend-compat run`` does and reports why its steps will be slow on
Ascend (:mod:`ascend_compat.perf`): each finding with its ``path:line``, severity, phase, weight in
the step and fix. A step ends at each ``optimizer.step()``; after ``W`` warm-up steps, ``N`` steps are
recorded and the script is stopped there (``--run-to-end`` lets it finish; ``--timeout`` stops it
after that many seconds, reporting what ran). Only training steps are judged unless ``--phases``
says otherwise: evaluation, checkpointing and set-up are told apart (:mod:`ascend_compat.observe.phases`)
and counted in a note. With ``--format json`` on standard output, the script's own output goes to
standard error.

``--from-trace PATH`` reads a trace exported by torch_npu's or torch's profiler on the cluster
(a ``*.json`` Chrome trace, or a torch_npu result directory) instead of running anything.

Exit status: the script's own when it fails; else 1 when a finding is at or above ``--fail-on``;
else 0. Usage errors exit 2.
"""
from __future__ import annotations

import argparse
import os
import sys

from ascend_compat.cli._watch import StopLimits, script_output, timeout_seconds

HELP = "run a training script and report why its steps will be slow on Ascend, line by line"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ascend_compat.cli._script import add_target_arguments

    parser.add_argument("--simulate", action="store_true", help="run on the simulated NPU")
    parser.add_argument("--steps", type=_positive, default=3, metavar="N", help="steps to record (default 3)")
    parser.add_argument("--warmup", type=_non_negative, default=1, metavar="W",
                        help="steps to run before recording (default 1)")
    parser.add_argument("--run-to-end", action="store_true",
                        help="let the script finish instead of stopping it after the recorded steps")
    parser.add_argument("--phases", type=_phases, default=("train",), metavar="P,...",
                        help="phases to judge: train (default), eval, checkpoint, setup, or all")
    parser.add_argument("--timeout", type=timeout_seconds, default=None, metavar="SECONDS",
                        help="stop the script after this many seconds and report what it ran")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--trace", metavar="FILE", help="also write the recorded steps as a Chrome trace "
                                                        "(chrome://tracing, Perfetto) with the findings marked")
    parser.add_argument("--fail-on", choices=("high", "medium", "low"), default=None,
                        help="exit 1 when a finding has this severity or a higher one (for CI)")
    parser.add_argument("--from-trace", metavar="PATH",
                        help="analyse a profiler trace from the cluster instead of running a script")
    add_target_arguments(parser)


def _phases(text: str):
    from ascend_compat.observe.phases import PHASES

    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return PHASES
    unknown = [n for n in names if n not in PHASES]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"{text!r}: give phases from {', '.join(PHASES)} (comma-separated), "
                                          "or all")
    return tuple(p for p in PHASES if p in names)


def _positive(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def _writable(path, what: str) -> bool:
    if path is not None and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        print(f"ascend-compat profile: cannot write the {what} to {path!r}: its directory does not exist",
              file=sys.stderr)
        return False
    return True


def main(args: argparse.Namespace) -> int:
    if not (_writable(args.output, "report") and _writable(args.trace, "trace")):
        return 2
    if args.from_trace is not None:
        if args.target or args.module:
            print("ascend-compat profile: give either --from-trace PATH or a script, not both", file=sys.stderr)
            return 2
        from ascend_compat.perf.npu_trace import TraceError, read_trace
        from ascend_compat.perf.rules import analyze

        from ascend_compat.cli._common import INPUT, CliError

        try:
            record = read_trace(args.from_trace)
        except TraceError as exc:  # a missing or unreadable trace: an input error (docs/cli.md)
            raise CliError(str(exc), INPUT) from None
        return _finish(args, analyze(record, backend="a profiler trace", phases=args.phases), 0)

    from ascend_compat.cli._script import parse_target, prepare_with_progress, run_to_status

    target = parse_target(args, prog="profile")
    prepare_with_progress(args, args.simulate)
    from ascend_compat.perf.record import StopProfiling, profile

    recorder = profile(steps=args.steps, warmup=args.warmup, auto_step=True, stop_after=not args.run_to_end)
    with script_output(args.format, args.output is None), StopLimits(timeout=args.timeout) as limits:
        try:
            with recorder:
                code = run_to_status(args.module, target, "profile")
        except StopProfiling:
            code = 0
    if limits.why:
        recorder.stopped(f"the script was {limits.why}")
    backend = "the simulated NPU" if args.simulate else ""
    return _finish(args, recorder.report(backend, phases=args.phases), code)


def _finish(args: argparse.Namespace, report, code: int) -> int:
    from ascend_compat._files import write_text_atomic

    text = report.json() if args.format == "json" else report.text() + "\n"
    if args.output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_text_atomic(args.output, text)
    if args.trace is not None:
        write_text_atomic(args.trace, report.chrome_trace())
    if code != 0:
        return code
    if args.fail_on is not None:
        from ascend_compat.perf.report import SEVERITIES

        worst = report.worst()
        if worst is not None and SEVERITIES.index(worst) <= SEVERITIES.index(args.fail_on):
            return 1
    return 0
