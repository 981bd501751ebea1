"""``ascend-compat audit [--torch-npu-version V] [--simulate] [--format text|json] [-o FILE] SCRIPT [ARGS...]``.

Runs a script (or ``-m MODULE``) exactly like ``ascend-compat run`` does and reports how its ops
would run on torch_npu:

* default, on the CPU (no NPU, no simulator): every aten op the script runs in its main thread,
  forward and backward, is recorded and routed against the native-op table of torch_npu ``V``
  (``ascend_compat.coverage.audit.OpRecorder``); the report gives operator coverage, CPU-fallback ops,
  ops called with a dtype torch_npu's kernel refuses, float64 casts torch_npu turns into float32,
  where each was first called, and known rewrites.
  The script must run on the CPU (device-agnostic code such as
  ``"cuda" if torch.cuda.is_available() else "cpu"`` does);
* ``--simulate``: for CUDA-only scripts. The simulated NPU (emulating torch_npu ``V``) and the
  runtime shim are installed as by ``ascend-compat run --simulate``, and a ``FallbackMonitor``
  counts every CPU fallback per op with the first user frame. This reports fallbacks only, not
  coverage.

The report goes to standard output after the script's own output (``-o FILE`` writes it to a file
instead, atomically); with ``--format json`` on standard output the script's own output goes to
standard error, so standard output parses. Exit status: the script's own when it fails, else 1 with
``--fail-on-fallback`` when something falls back, else 0; before the script starts, 2 for a usage
error and 3 when the script does not exist. The JSON report carries ``schema``
(``ascend-compat/audit``) and ``schema_version``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

HELP = "run a script and report which of its ops would fall back to the CPU on the NPU"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ascend_compat.cli._common import torch_npu_version
    from ascend_compat.cli._script import add_target_arguments

    parser.add_argument("--torch-npu-version", type=torch_npu_version, metavar="V", default=None,
                        help="torch_npu version whose operator coverage is used (default: newest known)")
    parser.add_argument("--simulate", action="store_true",
                        help="run on the simulated NPU (CUDA scripts) and count CPU fallbacks there")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--fail-on-fallback", action="store_true",
                        help="exit 1 when any op falls back to the CPU (for CI)")
    add_target_arguments(parser)


def _write(text: str, output) -> None:
    if output is None:
        from ascend_compat.cli import _console

        _console.write_report(text)
        return
    from ascend_compat._files import write_text_atomic
    from ascend_compat.cli._common import INPUT, CliError

    try:
        write_text_atomic(output, text)
    except OSError as exc:
        raise CliError(f"cannot write {output}: {exc.strerror or exc}", INPUT) from None


def _headline(code: int, ops_seen: int) -> str:
    """What to say above the report when the script failed or ran no op (empty otherwise)."""
    if ops_seen == 0:
        why = f"the script exited with status {code} before running any torch op" if code \
            else "the script ran no torch op"
        return f"Operator Coverage: nothing to judge: {why}\n"
    if code == 0:
        return ""
    return f"The script exited with status {code}: only the ops it ran before stopping are covered.\n"


def main(args: argparse.Namespace) -> int:
    from ascend_compat.cli._common import USAGE, CliError
    from ascend_compat.cli._script import parse_target, prepare_with_progress, run_to_status
    from ascend_compat.cli._watch import script_output

    target = parse_target(args, prog="audit")
    if args.output is not None and not os.path.isdir(os.path.dirname(os.path.abspath(args.output))):
        raise CliError(f"cannot write {args.output!r}: its directory does not exist", USAGE)
    if args.output is not None and os.path.isdir(args.output):
        raise CliError(f"-o {args.output!r} is a directory; give a file name", USAGE)
    from ascend_compat import data

    requested = args.torch_npu_version
    if requested is None and args.simulate:  # the simulator's own setting, if the user made one
        requested = os.environ.get("ASCEND_COMPAT_SIM_TORCH_NPU_VERSION") or None
    try:
        version = data.resolve_version(requested)
    except ValueError as exc:
        raise CliError(str(exc), USAGE) from None
    from ascend_compat._schemas import header

    head = header("audit")

    if args.simulate:
        if args.torch_npu_version is not None:
            os.environ["ASCEND_COMPAT_SIM_TORCH_NPU_VERSION"] = args.torch_npu_version
        prepare_with_progress(args, True)
        from ascend_compat.coverage.fallback import FallbackMonitor

        monitor = FallbackMonitor()
        with script_output(args.format, args.output is None), monitor:
            code = run_to_status(args.module, target, "audit")
        report = monitor.report
        fell_back = len(report) > 0
        if args.format == "json":
            text = json.dumps(dict(head, **report.to_dict(), mode="simulate", torch_npu_version=version,
                                   exit_code=code), indent=2) + "\n"
        else:
            text = _headline(code, 1) + \
                f"ascend-compat audit (simulated NPU, torch_npu {version}): " + report.text() + "\n"
    else:
        from ascend_compat.cli import _console
        from ascend_compat.cli._common import progress_enabled

        with _console.steps("preparing the op recorder", ("importing torch",), progress_enabled(args)) as step:
            step("importing torch")
            from ascend_compat.coverage.audit import OpRecorder

        recorder = OpRecorder(version)
        with script_output(args.format, args.output is None), recorder:
            code = run_to_status(args.module, target, "audit")
        audit = recorder.report()
        fell_back = bool(audit.fallbacks)
        if args.format == "json":
            text = json.dumps(dict(head, **audit.to_dict(), mode="cpu", exit_code=code), indent=2) + "\n"
        else:
            headline = _headline(code, len(audit.ops))
            body = audit.text()
            if headline.startswith("Operator Coverage"):  # nothing ran: keep only the tables line
                body = body.split("\n")[1]
            text = headline + body + "\n"
    _write(text, args.output)
    if code != 0:
        return code
    return 1 if (args.fail_on_fallback and fell_back) else 0
