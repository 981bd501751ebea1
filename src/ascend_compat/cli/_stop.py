"""Stopping a watched script early: after N training steps (``--steps``) or S seconds (``--timeout``).

Both raise :class:`ScriptStopped` in the script's thread: a ``SystemExit`` (status 0), so the script's
own ``except Exception`` handlers do not swallow it and the launcher returns as from a script that
ended; the command then reports what it saw and says why the script stopped (:attr:`StopLimits.why`).
A step ends when ``optimizer.step()`` returns. The timeout uses ``SIGALRM`` where there is one (the main
thread of a POSIX process) and ``_thread.interrupt_main`` elsewhere; a long kernel finishes first.
"""
from __future__ import annotations

import threading
from typing import Any, List, Optional

__all__ = ["ScriptStopped", "StopLimits"]


class ScriptStopped(SystemExit):
    """Raised into the script to stop it (``code`` 0)."""

    def __init__(self, why: str) -> None:
        super().__init__(0)
        self.why = why


class StopLimits:
    """A context manager stopping the script after ``steps`` optimizer steps or ``timeout`` seconds."""

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
        return isinstance(exc, ScriptStopped)
