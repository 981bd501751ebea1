"""``ascend-compat run [--simulate] SCRIPT [ARGS...]`` / ``ascend-compat run [--simulate] -m MODULE [ARGS...]``.

Runs user code the way ``python SCRIPT`` / ``python -m MODULE`` would (``__main__`` module, ``sys.argv``,
``sys.path[0]``, exit codes, exceptions and tracebacks), after preparing the process:

1. with ``--simulate``, the simulated NPU is installed (under ``torchrun`` with one device per local rank);
2. the runtime shim is activated, so CUDA code runs on the NPU.

Nothing else runs before the user's code. Every Python process the script starts - by any
launcher: Lightning's DDP launcher, ``torch.multiprocessing.spawn``, ``accelerate launch``, the
``deepspeed`` launcher, ``subprocess`` - is prepared the same way (:mod:`ascend_compat._inherit`), so
``ascend-compat run --simulate --devices 2 train.py`` runs a 2-device Lightning DDP script as is, and
``ascend-compat run --simulate -m accelerate.commands.launch --num_processes 2 train.py`` an accelerate
one. torchrun works either way: ``torchrun --nproc_per_node=N -m ascend_compat run --simulate train.py``.
The launch itself (checks before the start, ``__main__`` semantics, launch errors) is
:mod:`ascend_compat.cli._script`, shared with ``audit``, ``profile`` and ``compare``.
"""
from __future__ import annotations

import argparse
import os

HELP = "run a CUDA PyTorch script on the NPU (real, or simulated with --simulate)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ascend_compat.cli._script import add_target_arguments

    parser.add_argument(
        "--simulate",
        action="store_true",
        help="install the simulated NPU first (dry-run a migration without Ascend hardware)",
    )
    parser.add_argument("--devices", type=_device_count, default=None, metavar="N",
                        help="number of simulated NPUs (with --simulate; default 1, or one per local rank "
                             "under torchrun); child processes see the same devices")
    add_target_arguments(parser)


def _device_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"must be between 1 and 64, got {value}")
    return value


def main(args: argparse.Namespace) -> int:
    from ascend_compat.cli._script import parse_target, prepare_with_progress, run_target

    target = parse_target(args)
    if args.devices is not None:
        from ascend_compat.cli._common import USAGE, CliError

        if not args.simulate:
            raise CliError("--devices sets the number of simulated NPUs; add --simulate", USAGE)
        os.environ["ASCEND_COMPAT_SIM_DEVICES"] = str(args.devices)
    prepare_with_progress(args, args.simulate)
    return run_target(args.module, target, "run")
