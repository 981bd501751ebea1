"""What the commands that run a script under a watching tool share (``audit``, ``profile``, ``compare``):

* :func:`script_output` - while the script runs, its standard output goes to standard error when the
  report will go to standard output in a machine format (``--format json``), so that standard output
  holds the report alone and parses (docs/cli.md: "standard output is only ever the report"). The
  redirection is made on file descriptor 1, so output of C extensions and of child processes the
  script starts moves too;
* :func:`time_limit` - ``--timeout SECONDS``: the script is stopped after that much wall time
  (:class:`ScriptTimeout`, a ``SystemExit`` the script's ``except Exception`` does not swallow) and the
  tool reports what it saw until then.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Iterator, Optional


class ScriptTimeout(SystemExit):
    """Raised in the script's thread when ``--timeout`` runs out."""

    def __init__(self, seconds: float) -> None:
        super().__init__(0)
        self.seconds = seconds


def timeout_seconds(text: str) -> float:
    """argparse type for ``--timeout``: seconds, above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not allowed: give a number of seconds above 0")
    return value


@contextlib.contextmanager
def script_output(report_format: str, report_to_stdout: bool) -> Iterator[None]:
    """Send the script's standard output to standard error while the ``with`` block runs, when the
    report is machine-readable and goes to standard output; otherwise change nothing."""
    if report_format == "text" or not report_to_stdout:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        with contextlib.suppress(Exception):  # the script may have closed or replaced sys.stdout
            sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


class Limit:
    """What :func:`time_limit` yields: ``expired`` tells whether the time ran out."""

    def __init__(self, seconds: Optional[float]) -> None:
        self.seconds = seconds
        self.expired = False


@contextlib.contextmanager
def time_limit(seconds: Optional[float]) -> Iterator[Limit]:
    """Raise :class:`ScriptTimeout` in this (the main) thread after ``seconds`` of wall time (None: no
    limit); yields a :class:`Limit`. Uses ``SIGALRM`` (POSIX): a script blocked inside one long native
    call is stopped when that call returns."""
    limit = Limit(seconds)
    if seconds is None:
        yield limit
        return
    import signal

    if not hasattr(signal, "setitimer"):
        from ascend_compat.cli._common import USAGE, CliError

        raise CliError("--timeout needs POSIX signals (SIGALRM), which this platform does not have", USAGE)

    def expire(signum, frame):
        limit.expired = True
        raise ScriptTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield limit
    except ScriptTimeout:  # the timer fired after the script returned, in the tool's own code
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
