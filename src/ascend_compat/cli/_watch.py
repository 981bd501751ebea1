"""What the commands that run a script under a watching tool share (``audit``, ``profile``, ``compare``):

* :func:`script_output` - while the script runs, its standard output goes to standard error when the
  report will go to standard output in a machine format (``--format json``), so that standard output
  holds the report alone and parses (docs/cli.md: "standard output is only ever the report"). The
  redirection is made on file descriptor 1, so output of C extensions and of child processes the
  script starts moves too;
* :class:`StopLimits` - ``--steps N`` and ``--timeout SECONDS``: the script is stopped after N
  optimizer steps or that much wall time, by :class:`ScriptStopped` raised in the script's thread (a
  ``SystemExit`` with status 0, so the script's own ``except Exception`` handlers do not swallow it and
  the launcher returns as from a script that ended); the tool then reports what it saw and says why
  (:attr:`StopLimits.why`). A step ends when ``optimizer.step()`` returns. The timeout uses ``SIGALRM``
  in the main thread of a POSIX process and ``_thread.interrupt_main`` elsewhere; a long native call
  finishes first;
* :func:`timeout_seconds` - the argparse type of ``--timeout``.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
from typing import Any, Iterator, List, Optional

__all__ = ["script_output", "ScriptStopped", "StopLimits", "timeout_seconds"]


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


class ScriptStopped(SystemExit):
    """Raised into the script to stop it (``code`` 0); ``why`` says which limit."""

    def __init__(self, why: str) -> None:
        super().__init__(0)
        self.why = why


class StopLimits:
    """A context manager stopping the script after ``steps`` optimizer steps or ``timeout`` seconds
    (either may be None: no limit). ``why`` is empty, or the reason the script was stopped."""

    def __init__(self, steps: Optional[int] = None, timeout: Optional[float] = None) -> None:
        self.steps, self.timeout = steps, timeout
        self.done = 0
        self.why = ""
        self._hooks: List[Any] = []
        self._timer = None
        self._old_handler = None

    def _step(self, *args, **kwargs) -> None:
        self.done += 1
        if self.steps is not None and self.done >= self.steps and not self.why:
            self.why = f"stopped after {self.steps} step(s) (--steps)"
            raise ScriptStopped(self.why)

    def _expire(self, *args) -> None:
        if not self.why:
            self.why = f"stopped after {self.timeout:g} s (--timeout)"
            raise ScriptStopped(self.why)

    def __enter__(self) -> "StopLimits":
        if self.steps is not None:
            from torch.optim import optimizer as optim_module

            self._hooks.append(optim_module.register_optimizer_step_post_hook(self._step))
        if self.timeout is not None:
            import signal

            if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
                self._old_handler = signal.signal(signal.SIGALRM, self._expire)
                signal.setitimer(signal.ITIMER_REAL, self.timeout)
            else:
                import _thread

                self._timer = threading.Timer(self.timeout, _thread.interrupt_main)
                self._timer.daemon = True
                self._timer.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        if self._old_handler is not None:
            import signal

            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._old_handler)
            self._old_handler = None
        if self._timer is not None:
            self._timer.cancel()
            if exc_type is KeyboardInterrupt and not self.why:
                self.why = f"stopped after {self.timeout:g} s (--timeout)"
                return True
        return isinstance(exc, ScriptStopped)  # also a timer that fired after the script returned
