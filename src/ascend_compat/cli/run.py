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

``--simulate --nodes N`` rehearses a multi-node job on this machine: N torchrun launches against one
rendezvous, each node with ``--devices`` NPUs and its own logs (:mod:`ascend_compat.cli._nodes`).
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
    # REMAINDER so that options after the module name belong to the module (`-m pkg.train --lr 1`)
    parser.add_argument("-m", dest="module", nargs=argparse.REMAINDER, metavar="MODULE [ARGS...]",
                        help="run a library module as a script")
    parser.add_argument("target", nargs=argparse.REMAINDER, metavar="SCRIPT [ARGS...]")


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
    choice = "simulator" if simulate else _activation.decide()
    if choice is None:  # no NPU here: run unchanged (CUDA or CPU), like `python SCRIPT`
        return
    _activation.activate(choice)


def _strip_own_frames(exc: BaseException) -> None:
    """Drop the launcher's and runpy's frames so the traceback starts in user code, as ``python x.py`` shows."""
    tb = exc.__traceback__
    own = {__file__, "<frozen runpy>", getattr(sys.modules.get("runpy"), "__file__", None)}
    while tb is not None and tb.tb_frame.f_code.co_filename in own:
        tb = tb.tb_next
    if tb is not None:
        exc.__traceback__ = tb


def parse_target(args: argparse.Namespace, prog: str = "run"):
    """The SCRIPT [ARGS...] list from ``args`` (``--`` dropped); CliError (usage / input) if unusable."""
    from ascend_compat.cli._common import INPUT, USAGE, CliError

    target = list(args.target)
    if isinstance(args.module, list):  # `-m MODULE ARGS...` (nargs=REMAINDER): everything after -m
        if not args.module:
            raise CliError("-m needs a MODULE name", USAGE)
        args.module, target = args.module[0], list(args.module[1:]) + target
    if target[:1] == ["--"]:
        target = target[1:]
    if args.module is None and not target:
        raise CliError("give a SCRIPT or -m MODULE to run", USAGE)
    if args.module is None and not os.path.isfile(target[0]):
        what = "is a directory" if os.path.isdir(target[0]) else "no such file"
        raise CliError(f"can't open file {target[0]!r}: {what}", INPUT)
    return target


def run_target(module, target) -> int:
    """Run ``-m module`` (with ``target`` as its arguments) or the script ``target[0]`` as ``__main__``.

    Returns 0, or 1 (130 for KeyboardInterrupt) after printing an uncaught exception's traceback from
    the user's first frame; ``SystemExit`` propagates, as from ``python SCRIPT``.
    """
    import runpy

    try:
        if module is not None:
            sys.argv = [module, *target]  # runpy replaces argv[0] with the module's path
            sys.path[0] = os.getcwd()
            runpy.run_module(module, run_name="__main__", alter_sys=True)
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
        _hint_simulate(exc)
        return 130 if isinstance(exc, KeyboardInterrupt) else 1
    return 0


def _hint_simulate(exc: BaseException) -> None:
    """After torch's "not compiled with CUDA" on a machine with no NPU backend: point at --simulate."""
    text = str(exc)
    if ("Torch not compiled with CUDA enabled" in text or "Found no NVIDIA driver" in text) \
            and "torch_npu" not in sys.modules:
        from ascend_compat.cli import _console

        _console.message("note", "this machine has no NPU (torch_npu is not installed), so the script ran "
                                 "unchanged and its CUDA calls failed; to dry-run it on the simulated NPU: "
                                 "ascend-compat run --simulate SCRIPT", prog="ascend-compat")


def prepare_with_progress(args: argparse.Namespace, simulate: bool) -> None:
    """:func:`_prepare`, with start-up progress on stderr for the simulator (several seconds)."""
    from ascend_compat.cli import _console
    from ascend_compat.cli._common import USAGE, CliError, progress_enabled
    from ascend_compat.simulator._config import SimConfigError, env_arguments

    if simulate:  # the command line is strict where `import ascend_compat` only warns
        try:
            env_arguments(strict=True)
        except SimConfigError as exc:
            raise CliError(str(exc), USAGE) from None
    with _console.steps("starting the simulated NPU", ("importing torch", "installing the simulator"),
                        simulate and progress_enabled(args)) as step:
        step("importing torch")
        if simulate:
            import torch  # noqa: F401  (the slow part of start-up, shown as its own step)
        step("installing the simulator")
        _prepare(simulate)


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
    return run_target(args.module, target)
