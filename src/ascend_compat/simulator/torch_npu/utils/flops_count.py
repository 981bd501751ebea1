"""``torch_npu.utils.flops_count`` of the stand-in: ``FlopsCounter`` over torch's flop formulas.

torch_npu counts the FLOPs of its matmul-like kernels in C++; here a dispatch mode applies
``torch.utils.flop_counter``'s formulas (mm, bmm, addmm, baddbmm, convolution, SDPA, ...) to every op while
started. ``get_flops()`` returns ``[recorded, traversed]``: recorded excludes what ran while paused.
"""
from __future__ import annotations

import warnings
from typing import List, Optional

from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

__all__: List[str] = []


class _Mode(TorchDispatchMode):
    def __init__(self, owner: "_FlopsCounter"):
        super().__init__()
        self.owner = owner

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        count = flop_registry.get(func._overloadpacket)
        if count is not None:
            flops = int(count(*args, **kwargs, out_val=out))
            self.owner.traversed += flops
            if not self.owner.paused:
                self.owner.recorded += flops
        return out


class _FlopsCounter:
    def __init__(self):
        self.recorded = 0
        self.traversed = 0
        self.paused = False
        self._mode: Optional[_Mode] = None

    def start(self) -> None:
        if self._mode is None:
            self._mode = _Mode(self)
            self._mode.__enter__()

    def stop(self) -> None:
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        self.recorded = self.traversed = 0
        self.paused = False

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    def get_flops(self) -> List[int]:
        return [self.recorded, self.traversed]


class FlopsCounter(_FlopsCounter):
    def __init__(self):
        super().__init__()
        warnings.warn("torch_npu.utils.flops_count.FlopsCounter() will be deprecated. "
                      "If necessary, please use torch_npu.utils.FlopsCounter().", FutureWarning)
