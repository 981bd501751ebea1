"""``ascend-compat run [--simulate] SCRIPT [ARGS...]`` / ``ascend-compat run [--simulate] -m MODULE [ARGS...]``.

Runs user code the way ``python SCRIPT`` / ``python -m MODULE`` would (``__main__`` module, ``sys.argv``,
``sys.path[0]``, exit codes, exceptions and tracebacks), after preparing the process:

1. with ``--simulate``, the simulated NPU is installed (under ``torchrun`` with one device per local rank);
2. the runtime shim is activated, so CUDA code runs on the NPU.

Nothing else runs before the user's code. Under torchrun each rank is prepared the same way:
``torchrun --nproc_per_node=N -m ascend_compat run --simulate train.py``.
"""
from __future__ import annotations

import argparse
import os
import sys

HELP = "run a CUDA PyTorch script on the NPU (real, or simulated with --simulate)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--simulate",
        action="store_true",
        help="install the simulated NPU first (dry-run a migration without Ascend hardware)",
    )
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a library module as a script")
    parser.add_argument("target", nargs=argparse.REMAINDER, metavar="SCRIPT [ARGS...]")


def _prepare(simulate: bool) -> None:
    """Environment translation, then the backend, then the patches - in that order, before user code.

    ``ASCEND_COMPAT_NO_PATCH=1`` is honoured: then only the simulator (if asked for) is installed.
    """
    from ascend_compat import _activation, _config

    if simulate:
        # Child processes that import ascend_compat (spawned DataLoader workers, helpers) simulate too.
        os.environ["ASCEND_COMPAT_SIMULATE"] = "1"
    if _config.no_patch_requested():
        if simulate:
            from ascend_compat import simulator

            simulator.install_from_env()
        return
    _activation.activate("simulator" if simulate else None)


def _strip_own_frames(exc: BaseException) -> None:
    """Drop the launcher's and runpy's frames so the traceback starts in user code, as ``python x.py`` shows."""
    tb = exc.__traceback__
    own = {__file__, "<frozen runpy>", getattr(sys.modules.get("runpy"), "__file__", None)}
    while tb is not None and tb.tb_frame.f_code.co_filename in own:
        tb = tb.tb_next
    if tb is not None:
        exc.__traceback__ = tb


def main(args: argparse.Namespace) -> int:
    import runpy

    target = list(args.target)
    if target[:1] == ["--"]:
        target = target[1:]
    if args.module is None and not target:
        print("ascend-compat run: give a SCRIPT or -m MODULE to run", file=sys.stderr)
        return 2
    if args.module is None and not os.path.exists(target[0]):
        print(f"ascend-compat run: can't open file {target[0]!r}: no such file", file=sys.stderr)
        return 2

    _prepare(args.simulate)

    try:
        if args.module is not None:
            sys.argv = [args.module, *target]  # runpy replaces argv[0] with the module's path
            sys.path[0] = os.getcwd()
            runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        else:
            script = target[0]
            sys.argv = target
            sys.path[0] = os.path.dirname(os.path.abspath(script))
            runpy.run_path(script, run_name="__main__")
    except SystemExit:
        raise
    except BaseException as exc:  # print like the interpreter would, starting at the user's frame
        _strip_own_frames(exc)
        sys.excepthook(type(exc), exc, exc.__traceback__)
        return 130 if isinstance(exc, KeyboardInterrupt) else 1
    return 0
