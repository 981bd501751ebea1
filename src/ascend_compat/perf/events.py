"""What the advisor records of one op call: :class:`OpEvent` (plain data, no torch objects), and
:class:`StepRecord`, the record of a whole run. Both the live recorder (:mod:`.record`) and the
trace reader (:mod:`.npu_trace`) produce them; :mod:`.rules` reads nothing else."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

#: ``(file, line, function)`` of the user's code that issued an op
Site = Tuple[str, int, str]


@dataclass
class OpEvent:
    """One op call inside a recorded step.

    ``kind`` is the routing on the NPU (``native``, ``cpu_fallback``, ``other``); ``shapes`` and
    ``dtypes`` describe the tensor inputs (non-tensor arguments are left out), ``out_shapes`` the
    tensor outputs;
    ``flops`` is the matmul/conv/attention FLOP count (0 for other ops); ``h2d``/``d2h`` are bytes
    copied host-to-device / device-to-host by the op itself (a fallback's copies included);
    ``sync`` names a device-to-host synchronisation (``item``, ``to_cpu``, ``data_dependent``,
    ``print``) or is ``""``; ``tags`` carry op-specific observations (``noncontiguous``,
    ``channels_last``, ``construct``, ``optimizer``, ``backward``, ``view``, ``log_of_softmax``,
    ``pinned``/``pageable``, ``blocking``; ``composite``: an op that ran as its composite kernel's pieces,
    kept with kind ``other`` for the data flow; ``inner``: one of those pieces); ``phase`` is the part of the script that ran it (``train``,
    ``eval``, ``checkpoint``, ``setup``: :mod:`ascend_compat.observe.phases`); ``via`` names the library
    function that issued a synchronisation on the user's behalf (``GradScaler.step``), or is ``""``;
    ``seq`` numbers the events of a run in call order, and ``inputs`` gives, per tensor input, the
    ``seq`` of the event that produced it (-1 when unknown): the data flow the fusion rules follow.
    """

    step: int
    name: str
    kind: str = "native"
    site: Optional[Site] = None
    module: str = ""
    shapes: Tuple[Tuple[int, ...], ...] = ()
    dtypes: Tuple[str, ...] = ()
    out_numel: int = -1
    out_shapes: Tuple[Tuple[int, ...], ...] = ()
    flops: int = 0
    h2d: int = 0
    d2h: int = 0
    sync: str = ""
    tags: Tuple[str, ...] = ()
    start_ns: int = 0
    dur_ns: int = 0
    phase: str = "train"
    via: str = ""
    seq: int = -1
    inputs: Tuple[int, ...] = ()


@dataclass
class StepRecord:
    """The recorded steps of a run: ``events`` in call order, per-step wall times, and facts about
    the run the rules need (``optimizers``: class name -> how its step ran, ``notes``)."""

    steps: List[int] = field(default_factory=list)
    step_ns: Dict[int, Tuple[int, int]] = field(default_factory=dict)  # step -> (start, end)
    events: List[OpEvent] = field(default_factory=list)
    optimizers: Dict[str, str] = field(default_factory=dict)  # "AdamW" -> "single_tensor" | "foreach" | "fused"
    dropped: int = 0  # events not kept because of the event cap
    source: str = "dispatch"  # "dispatch" (live) or "trace" (read from a profiler trace)
    notes: List[str] = field(default_factory=list)
    stopped: str = ""  # why the run was stopped before its end by the tool (``--timeout``), or ""

    @property
    def n_steps(self) -> int:
        return max(1, len(self.steps))

    def only(self, phase: str) -> "StepRecord":
        """The same steps with only the events of ``phase``; the optimizers only for ``train``."""
        return StepRecord(steps=list(self.steps), step_ns=dict(self.step_ns),
                          events=[e for e in self.events if e.phase == phase],
                          optimizers=dict(self.optimizers) if phase == "train" else {},
                          dropped=self.dropped, source=self.source, notes=list(self.notes), stopped=self.stopped)

    def phase_counts(self) -> Dict[str, int]:
        """NPU op calls per phase (views and host-only events left out)."""
        counts: Dict[str, int] = {}
        for e in self.events:
            if e.kind != "other" or e.h2d:
                counts[e.phase] = counts.get(e.phase, 0) + 1
        return counts
