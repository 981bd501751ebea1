"""A dispatch mode that records the name of every op reaching the backends (below autograd) and runs it."""
from __future__ import annotations

from torch.utils._python_dispatch import TorchDispatchMode


class RecordingMode(TorchDispatchMode):
    """``ops``: ``str(func)`` of every op dispatched while the mode is on, in order."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))
