"""The op level of a run record: each op's output sketch, by module, for the drift comparison to name the
op where a module starts to drift (:mod:`.recorder`, :mod:`.drift`)."""
from __future__ import annotations

from typing import Dict, Tuple

from ascend_compat.accuracy.runrecord import first_floating, stats
from ascend_compat.observe.observer import OpCall, OpObserver

__all__ = ["OpStatsObserver"]


class OpStatsObserver(OpObserver):
    """Records the first floating output of every op (views aside) that runs inside a module, while the
    recorder records ops (its first ``op_steps`` steps); backward ops are placed at their forward module."""

    def __init__(self, recorder) -> None:
        super().__init__(own_thread=True, modules=True, forward_sites=True)
        self.recorder = recorder
        self.calls: Dict[Tuple[str, str, str], int] = {}

    def watching(self) -> bool:
        return self.recorder.record.recording_ops

    def on_op(self, call: OpCall):
        import torch

        out = call.run()
        if call.func.is_view:
            return out
        module, site = self.origin(call)
        if not module:
            return out
        first = first_floating(out)
        if first is None:
            return out
        phase = "backward" if torch._C._current_autograd_node() is not None else "forward"
        key = (module, call.name, phase)
        self.calls[key] = self.calls.get(key, 0) + 1
        self.recorder.record.add_op(call.name, module, self.calls[key], phase, site, stats(first))
        return out
