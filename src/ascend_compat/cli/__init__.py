"""The ``ascend-compat`` command line.

Every sub-command lives in its own module in this package and provides three things:

* ``HELP``: one line shown in ``ascend-compat --help``;
* ``add_arguments(parser)``: declares its options on an ``argparse`` parser;
* ``main(args) -> int``: runs it and returns the process exit code.

Command modules import nothing heavy at module level, so ``ascend-compat --help`` stays fast;
the library code a command needs is imported inside its ``main``.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

#: command name -> module (relative to this package). Order is the order shown in --help.
COMMANDS = {
    "run": "run",
    "check": "check",
    "migrate": "migrate",
    "doctor": "doctor",
    "error": "error",
    "audit": "audit",
    "profile": "profile",
}


def _load(name: str):
    return importlib.import_module(f"{__name__}.{COMMANDS[name]}")


def build_parser() -> argparse.ArgumentParser:
    from ascend_compat._version import __version__

    parser = argparse.ArgumentParser(
        prog="ascend-compat",
        description="Run CUDA PyTorch code on Huawei Ascend NPUs, and find what will not run.",
    )
    parser.add_argument("--version", action="version", version=f"ascend-compat {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = _load(name)
        cmd = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(cmd)
        cmd.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ascend-compat`` console script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_module", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args._module.main(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
