"""``ascend-compat compare [--simulate] [options] SCRIPT [ARGS...]``.

Runs a script like ``ascend-compat run`` does while every op on the NPU is also run on the host and
judged by the accuracy standard (:mod:`ascend_compat.accuracy`): the report names the first op whose
result is worse than CUDA's would be - with its source line, module, call count and dtype - then every
departure, what differs *as on Ascend* by design, every op call not compared and why, and a table per
module. With a reference run (``--against FILE``, or ``--drift`` to make one here first) it also
compares the whole run: per-step losses, the first module and op that drift beyond the standard.
``--record FILE`` records a run to be such a reference (on any machine; ``--native`` leaves the shim
and the simulator out, for a CUDA machine).

The script's standard output goes to standard error, so standard output is only the report. Exit
status: the script's own when it fails; else 1 when something departs (with ``--strict`` also what is
as on Ascend), a module drifts, or nothing was compared; 0 otherwise; usage errors 2 (an unknown op
for ``--ops``, a ``--modules`` prefix no module has), a missing script or reference 3.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys

from ascend_compat.cli._common import positive_int
from ascend_compat.cli._watch import timeout_seconds

HELP = "run a script with every NPU op checked against CUDA's accuracy; report the first op that is worse"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ascend_compat.cli._script import add_target_arguments

    parser.add_argument("--simulate", action="store_true", help="run on the simulated NPU")
    parser.add_argument("--strict", action="store_true",
                        help="count what differs as on Ascend by design (HF32, float64 run in float32) as departures")
    parser.add_argument("--sample", type=positive_int, default=1, metavar="K", help="compare every K-th op call")
    parser.add_argument("--ops", type=_names, default=None, metavar="OP,...",
                        help="compare only these ops (aten::gelu,aten::mm)")
    parser.add_argument("--modules", type=_names, default=None, metavar="PREFIX,...",
                        help="compare only ops run inside modules with these path prefixes (Model.layers.0)")
    parser.add_argument("--steps", type=positive_int, default=None, metavar="N",
                        help="stop the script after N steps (a step ends at optimizer.step())")
    parser.add_argument("--timeout", type=timeout_seconds, default=None, metavar="SECONDS",
                        help="stop the script after SECONDS and report what ran")
    parser.add_argument("--max-numel", type=positive_int, default=None, metavar="N",
                        help="skip outputs with more than N elements")
    parser.add_argument("--against", metavar="REFERENCE", help="compare the whole run with a recorded reference run")
    parser.add_argument("--drift", choices=("float64", "float32"), default=None,
                        help="record the reference run here first (the script on the host, in float64 or as "
                             "written), then compare against it; needs --simulate")
    parser.add_argument("--record", metavar="FILE", help="record this run as a reference (no op comparison)")
    parser.add_argument("--precision", choices=("as-run", "float64"), default="as-run",
                        help="with --record: compute every floating op in float64 (the golden run)")
    parser.add_argument("--native", action="store_true",
                        help="with --record: run without the shim and the simulator (a reference on CUDA)")
    parser.add_argument("--op-steps", type=positive_int, default=1, metavar="N",
                        help="record op-level values for the first N steps (default 1)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    add_target_arguments(parser)


def _names(text: str):
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give at least one name")
    return names



def _check_options(args) -> None:
    from ascend_compat.cli._common import INPUT, USAGE, CliError

    for path in (args.output, args.record):
        if path is not None and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise CliError(f"cannot write {path!r}: its directory does not exist", USAGE)
        if path is not None and os.path.isdir(path):
            raise CliError(f"{path!r} is a directory; give a file name", USAGE)
    if args.record and (args.against or args.drift):
        raise CliError("--record makes a reference; --against / --drift compare with one: use one of them", USAGE)
    if args.against and args.drift:
        raise CliError("--against gives the reference, --drift makes one: use one of them", USAGE)
    if (args.precision != "as-run" or args.native) and not args.record:
        raise CliError(f"{'--native' if args.native else '--precision'} applies to --record", USAGE)
    if args.native and args.simulate:
        raise CliError("--native runs without the simulator: drop --simulate", USAGE)
    if args.drift and not args.simulate:
        raise CliError("--drift records the reference on the simulated NPU: add --simulate (on an NPU machine, "
                       "record the reference elsewhere with --record and pass it with --against)", USAGE)
    if args.against is not None and not os.path.isfile(args.against):
        raise CliError(f"can't open the reference {args.against!r}: no such file", INPUT)


def main(args: argparse.Namespace) -> int:
    from ascend_compat.cli._common import INPUT, CliError
    from ascend_compat.cli._script import parse_target, prepare_with_progress

    _check_options(args)
    target = parse_target(args, prog="compare")
    reference = None
    if args.against:
        from ascend_compat.accuracy.runrecord import RecordError, load

        try:
            reference = load(args.against)
        except RecordError as exc:
            raise CliError(str(exc), INPUT) from None
    if args.drift:
        reference = _record_reference(args, target)
    if not args.native:
        prepare_with_progress(args, args.simulate)
    if args.record:
        return _record(args, target)
    return _compare(args, target, reference)


def _run_script(args, target, *contexts):
    """Run the script (its stdout to stderr when the report is JSON on stdout) inside ``contexts`` and the stop limits; (code, why stopped)."""
    from ascend_compat.cli._watch import StopLimits, script_output
    from ascend_compat.cli._script import run_to_status

    limits = StopLimits(args.steps, args.timeout)
    with contextlib.ExitStack() as stack:
        for ctx in contexts:
            stack.enter_context(ctx)
        with limits, script_output(args.format, args.output is None and not args.record):
            code = run_to_status(args.module, target, "compare")
    return code, limits.why


def _run_info(args, target, precision: str) -> dict:
    import torch

    from ascend_compat import __version__

    device = "the simulated NPU" if args.simulate else ("native (no shim)" if args.native else "npu")
    return {"script": target[0] if target and args.module is None else None, "module": args.module,
            "argv": list(target), "device": device, "precision": precision, "torch": torch.__version__,
            "ascend_compat": __version__}


def _record(args, target) -> int:
    from ascend_compat.accuracy.recorder import RunRecorder

    precision = args.precision
    recorder = RunRecorder(_run_info(args, target, precision), max_steps=args.steps, op_steps=args.op_steps)
    contexts = [recorder]
    if precision == "float64":
        from ascend_compat.accuracy.golden_run import Float64Mode

        contexts.append(Float64Mode())
    code, why = _run_script(args, target, *contexts)
    recorder.record.save(args.record)
    data = recorder.record.to_dict()
    print(f"recorded {len(data['steps'])} step(s) of {target[0] if target else args.module} ({precision}) to "
          f"{args.record}" + (f"; {why}" if why else ""))
    return code


def _record_reference(args, target) -> dict:
    """``--drift``: the reference run, recorded in a child process on the simulated NPU with its NPU numerics
    off (exact float32, float64 kept, no injected faults)."""
    import subprocess
    import tempfile

    from ascend_compat.accuracy.runrecord import RecordError, load
    from ascend_compat.cli._common import INPUT, CliError

    with tempfile.TemporaryDirectory(prefix="ascend-compat-drift-") as tmp:
        path = os.path.join(tmp, "reference.json")
        argv = [sys.executable, "-m", "ascend_compat", "compare", "--simulate", "--record", path,
                "--precision", "float64" if args.drift == "float64" else "as-run", "--op-steps", str(args.op_steps)]
        if args.steps is not None:
            argv += ["--steps", str(args.steps)]
        if args.timeout is not None:
            argv += ["--timeout", str(args.timeout)]
        argv += ["-m", args.module] if args.module else []
        argv += ["--", *target] if target else []
        env = {k: v for k, v in os.environ.items() if k != "ASCEND_COMPAT_SIM_FAULTS"}
        env.update(ASCEND_COMPAT_SIM_NUMERICS="exact", ASCEND_COMPAT_SIM_FLOAT64="allow")
        print(f"ascend-compat compare: recording the reference run ({args.drift}) ...", file=sys.stderr)
        proc = subprocess.run(argv, env=env, stdout=sys.stderr, stderr=sys.stderr)
        try:
            return load(path)
        except RecordError as exc:
            raise CliError(f"the reference run failed (exit {proc.returncode}): {exc}", INPUT) from None


def _compare(args, target, reference) -> int:
    from ascend_compat.accuracy.mirror import compare, unknown_ops
    from ascend_compat.cli._common import USAGE, CliError

    unknown = unknown_ops(args.ops or ())
    if unknown:
        raise CliError(f"--ops: no operator {', '.join(unknown)} in this torch (write it as aten::gelu or "
                       "aten::add.Tensor)", USAGE)
    comparison = compare(sample=args.sample, ops=args.ops, modules=args.modules, max_numel=args.max_numel)
    contexts = [comparison]
    recorder = None
    if reference is not None:
        from ascend_compat.accuracy.recorder import RunRecorder

        recorder = RunRecorder(_run_info(args, target, "as-run"), max_steps=args.steps, op_steps=args.op_steps)
        contexts.append(recorder)  # entered last, so the comparison's host runs happen below it, unseen
    code, why = _run_script(args, target, *contexts)
    if args.modules and not any(m.startswith(tuple(args.modules)) for m in comparison.modules_seen if m):
        seen = sorted(m for m in comparison.modules_seen if m)
        raise CliError(f"--modules: no module path starts with {', '.join(args.modules)}"
                       + (f" (the modules that ran ops: {', '.join(seen[:8])}{' ...' if len(seen) > 8 else ''})"
                          if seen else " (no op ran inside a module)"), USAGE)
    drift = None
    if recorder is not None:
        from ascend_compat.accuracy.drift import compare_runs

        drift = compare_runs(recorder.record.to_dict(), reference)
    report = comparison.report("the simulated NPU" if args.simulate else "", strict=args.strict, drift=drift,
                               stopped=why)
    text = report.json() if args.format == "json" else report.text() + "\n"
    if args.output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        from ascend_compat._files import write_text_atomic

        write_text_atomic(args.output, text)
    if code != 0:
        return code
    return 0 if report.passed else 1
