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
    "compare": "compare",
    "plan": "plan",
}


def _load(name: str):
    return importlib.import_module(f"{__name__}.{COMMANDS[name]}")


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its usage errors written like every other error (:func:`_console.message`), so
    ``ascend-compat error --bogus`` does not read ``ascend-compat error: error: ...``."""

    def error(self, message: str):
        from ascend_compat.cli import _console
        from ascend_compat.cli._common import USAGE

        self.print_usage(sys.stderr)
        _console.message("error", message, prog=self.prog)
        self.exit(USAGE)


def build_parser() -> argparse.ArgumentParser:
    from ascend_compat._version import __version__
    from ascend_compat.cli._common import add_common

    parser = _Parser(
        prog="ascend-compat",
        description="Run CUDA PyTorch code on Huawei Ascend NPUs, and find what will not run.",
        epilog="Exit codes: 0 success, 1 findings over the threshold, 2 usage error, 3 input error, "
               "4 internal error; run, audit and profile return the script's own status once it has started.",
    )
    parser.add_argument("--version", action="version", version=f"ascend-compat {__version__}")
    parser.add_argument("--debug", action="store_true", help="print Python tracebacks for errors (for bug reports)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = _load(name)
        cmd = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(cmd)
        add_common(cmd)
        cmd.set_defaults(_module=module, _parser=cmd)
    return parser


def _fail(args: argparse.Namespace, message: str, code: int) -> int:
    from ascend_compat.cli import _console

    _console.message("error", message, prog=f"ascend-compat {args.command}")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ascend-compat`` console script; returns the exit code (see ``_common``)."""
    from ascend_compat.cli._common import INTERNAL, INTERRUPTED, USAGE, CliError

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if getattr(args, "_module", None) is None:
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        parser.print_help(sys.stderr)
        return USAGE
    if extra:  # reported by the sub-command's own parser, so its usage is shown
        args._parser.error(f"unrecognized arguments: {' '.join(extra)}")
    debug = bool(getattr(args, "debug", False))
    try:
        return int(args._module.main(args) or 0)
    except CliError as exc:
        if debug:
            import traceback

            traceback.print_exc()
        return _fail(args, str(exc), exc.code)
    except KeyboardInterrupt:
        return INTERRUPTED
    except BrokenPipeError:  # output piped into `head` and the like: not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # a bug: one line, the traceback only with --debug
        if debug:
            raise
        return _fail(args, f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback "
                           "and report it)", INTERNAL)
