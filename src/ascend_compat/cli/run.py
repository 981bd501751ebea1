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

``--simulate --nodes N`` rehearses a multi-node job on this machine: N torchrun launches against one
rendezvous, each node with ``--devices`` NPUs and its own logs (:mod:`ascend_compat.cli._nodes`).
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
    cluster = parser.add_argument_group("multi-node rehearsal (with --simulate)")
    cluster.add_argument("--nodes", type=_node_count, default=None, metavar="N",
                         help="run the script as a job of N simulated nodes on this machine (one torchrun per node "
                              "against one rendezvous); each node has --devices NPUs")
    cluster.add_argument("--nproc-per-node", type=_device_count, default=None, metavar="P",
                         help="processes per node (default: one per device)")
    cluster.add_argument("--log-dir", default=None, metavar="DIR",
                         help="where each node's logs go (DIR/node<k>/: plogs, torchrun's per-rank logs, launcher "
                              "output); default ascend-compat-logs/job-<time>")
    cluster.add_argument("--node-env", action="append", default=[], metavar="FILE",
                         help="a node's saved environment (env > FILE), once per node in node order: its HCCL_*, "
                              "ASCEND_*, RANK_TABLE_FILE settings apply to that node")
    add_target_arguments(parser)


def _device_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"must be between 1 and 64, got {value}")
    return value


def _node_count(text: str) -> int:
    value = _device_count(text)
    if value > 16:
        raise argparse.ArgumentTypeError(f"at most 16 simulated nodes, got {value}")
    return value


def _run_nodes(args: argparse.Namespace, target) -> int:
    from ascend_compat.cli import _nodes
    from ascend_compat.cli._common import INPUT, USAGE, CliError
    from ascend_compat.doctor import envdump

    if len(args.node_env) > args.nodes:
        raise CliError(f"{len(args.node_env)} --node-env files for {args.nodes} node(s)", USAGE)
    dumps = []
    for path in args.node_env:
        try:
            dumps.append(envdump.read(path))
        except OSError as exc:
            raise CliError(f"--node-env {path}: cannot read it ({exc.strerror or exc})", INPUT) from None
    log_dir = args.log_dir or _nodes.default_log_dir()
    return _nodes.launch(target, args.module, args.nodes, args.devices or 1, args.nproc_per_node, log_dir, dumps)


def main(args: argparse.Namespace) -> int:
    from ascend_compat.cli._common import USAGE, CliError
    from ascend_compat.cli._script import parse_target, prepare_with_progress, run_target

    target = parse_target(args)
    for option, value in (("--devices", args.devices), ("--nodes", args.nodes)):
        if value is not None and not args.simulate:
            raise CliError(f"{option} sets up simulated NPUs; add --simulate", USAGE)
    if args.nodes is None and (args.nproc_per_node or args.log_dir or args.node_env):
        raise CliError("--nproc-per-node, --log-dir and --node-env belong to a multi-node rehearsal; add --nodes N",
                       USAGE)
    if args.nodes is not None:
        return _run_nodes(args, target)
    if args.devices is not None:
        os.environ["ASCEND_COMPAT_SIM_DEVICES"] = str(args.devices)
    prepare_with_progress(args, args.simulate)
    return run_target(args.module, target, "run")
