"""What every command shares: exit codes, option validators, the error type commands raise.

Exit codes (one table for every command; ``docs/cli.md`` shows it to users):

====  ===================================================================================
0     success
1     findings over the threshold (``check --fail-on``, ``audit --fail-on-fallback``,
      ``profile --fail-on``, a doctor FAIL, a log with nothing recognisable, a file ``migrate``
      could not rewrite)
2     usage error: unknown option, missing or invalid option value
3     input error: a path or file that does not exist or cannot be read, no Python files found
4     internal error (a bug in ascend-compat, or a broken install; ``--debug`` prints the traceback)
130   interrupted (Ctrl-C)
====  ===================================================================================

``run``, ``audit`` and ``profile`` return the script's own exit status once the script has started.
"""
from __future__ import annotations

import argparse
import os
import sys

OK = 0
FINDINGS = 1
USAGE = 2
INPUT = 3
INTERNAL = 4
INTERRUPTED = 130

EXIT_CODES = (
    (OK, "success"),
    (FINDINGS, "findings over the threshold"),
    (USAGE, "usage error (unknown option, invalid value)"),
    (INPUT, "input error (missing or unreadable path, no Python files found)"),
    (INTERNAL, "internal error (a bug: rerun with --debug and report the traceback)"),
    (INTERRUPTED, "interrupted"),
)


class CliError(Exception):
    """A failure to report in one line (no traceback) with its exit code."""

    def __init__(self, message: str, code: int = INPUT):
        super().__init__(message)
        self.code = code


def add_common(parser: argparse.ArgumentParser) -> None:
    """Options every command has: ``--debug`` and the progress switch."""
    group = parser.add_argument_group("output")
    group.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="print Python tracebacks for errors (for bug reports)")
    group.add_argument("--progress", dest="progress", action="store_true", default=argparse.SUPPRESS,
                       help="show progress on stderr even when it is not a terminal or under CI")
    group.add_argument("--no-progress", dest="progress", action="store_false", default=argparse.SUPPRESS,
                       help="never show progress")


# ------------------------------------------------------------------------------ validators
def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not allowed: give 1 or more")
    return value


def jobs(text: str) -> int:
    """argparse type for ``--jobs``: 0 (= every core) or a positive integer."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is not allowed: give 0 (every core) or a positive number")
    return value


def positive_megabytes(text: str) -> float:
    """argparse type: a size in MB, greater than 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of megabytes") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not allowed: give a size above 0 (e.g. 10)")
    return value


def torch_npu_version(text: str) -> str:
    """argparse type: a torch_npu version ascend-compat has data for (returned unchanged).

    Versions are matched by major.minor. A version older than the oldest table, or of a later
    major version, is refused; a newer minor of the same major is accepted with a warning (the
    newest table is then used).
    """
    from ascend_compat import _versions, data

    known = data.native_op_versions()
    listing = f"known: {known[0]} to {known[-1]}"
    try:
        major, minor = _versions.minor(text)
    except _versions.VersionError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a version like 2.5 or 2.5.1 ({listing})") from None
    newest = _versions.minor(known[-1])
    if major > newest[0]:
        raise argparse.ArgumentTypeError(f"torch_npu {text} does not exist ({listing})")
    try:
        data.resolve_version(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if (major, minor) > newest:
        warn(f"torch_npu {text} is newer than the newest version with data; using {known[-1]}")
    return text.strip()


# ------------------------------------------------------------------------------ output
def warn(message: str) -> None:
    """One warning line on stderr (coloured on a terminal)."""
    from ascend_compat.cli import _console

    _console.message("warning", message)


def progress_enabled(args: argparse.Namespace) -> bool:
    """Progress bars: on a terminal stderr outside CI, unless ``--progress`` / ``--no-progress`` says."""
    forced = getattr(args, "progress", None)
    if forced is not None:
        return bool(forced)
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        return False
    return sys.stderr.isatty()
