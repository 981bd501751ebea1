"""Listeners for simulated CPU fallbacks.

``fn(op_name)`` registered with :func:`add_fallback_listener` is called with e.g. ``"aten::histc"``
every time an op without a native kernel in the emulated torch_npu version runs on the simulated
NPU (not only the first time, unlike the warning). Listeners run synchronously in the calling
thread; an exception raised by a listener propagates to the op's caller.
"""
from __future__ import annotations

import threading
from typing import Callable, List

_listeners: List[Callable[[str], None]] = []
_lock = threading.Lock()


def add_fallback_listener(fn: Callable[[str], None]) -> None:
    """Register ``fn`` (idempotent: registering the same function twice calls it once)."""
    if not callable(fn):
        raise TypeError(f"fallback listener must be callable, got {fn!r}")
    with _lock:
        if fn not in _listeners:
            _listeners.append(fn)


def remove_fallback_listener(fn: Callable[[str], None]) -> None:
    """Unregister ``fn``; unknown listeners are ignored."""
    with _lock:
        try:
            _listeners.remove(fn)
        except ValueError:
            pass


def notify(op_name: str) -> None:
    """Call every listener with ``op_name`` (called by the simulator on each fallback)."""
    for fn in tuple(_listeners):
        fn(op_name)
