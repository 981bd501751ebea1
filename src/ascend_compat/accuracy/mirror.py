"""Mirror every NPU op on a CPU reference and find the first one whose result departs.

:func:`compare` returns a :class:`Comparison`, a context manager around a step (or a whole script,
which is what ``ascend-compat compare`` does). Inside it a ``TorchDispatchMode`` sees every op with an
NPU tensor input, forward and backward: it copies the op's inputs to the host (floating inputs
upcast to float32, or float64 with ``reference="float64"``), runs the op on the NPU as usual, runs
the same op on the host copies, and compares each floating output (:mod:`.metrics`). Each op is
judged on the NPU's own inputs, so errors do not accumulate: the first departing op is where the
NPU run starts to differ. Random ops, views and ``out=`` calls are not compared.

The comparison is an op observer (:class:`ascend_compat.observe.OpObserver`, with
``forward_sites``): backward ops are reported where their forward op was written (each autograd
node is tagged with the module path and user source line of the call that created it). Nodes
created before the comparison started, or inside composite functions below the tagged call, fall
back to the module and line current when the backward runs.

Cost controls: ``sample=k`` compares every k-th op call; ``ops`` / ``modules`` restrict it (op names
such as ``aten::gelu``; module path prefixes such as ``Llama.layers.0``); ``steps=n`` compares the
first n steps only (a step ends at ``Comparison.step()`` or, with ``auto_step``, at each
``optimizer.step()``); ``max_numel`` skips outputs larger than that; ``max_records`` caps how many
per-op results are kept (departures are always kept). Nothing is retained but numbers.

Works on real torch_npu and on the simulated NPU alike (it relies on nothing of the simulator).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ascend_compat.accuracy.metrics import Metrics, measure, tolerance
from ascend_compat.observe.observer import OpCall, OpObserver

__all__ = ["compare", "compare_model", "Comparison", "OpResult"]

_REFERENCE = {"float32", "float64"}


@dataclass
class OpResult:
    """One compared op call: ``call`` counts calls of this op (1-based), ``index`` all compared calls."""

    index: int
    name: str
    call: int
    dtype: str
    module: str
    site: Optional[Tuple[str, int, str]]
    phase: str
    metrics: Metrics
    rtol: float
    atol: float

    @property
    def departs(self) -> bool:
        return self.metrics.departs

    @property
    def location(self) -> str:
        return f"{self.site[0]}:{self.site[1]}" if self.site else "<no user frame>"

    def to_dict(self) -> Dict[str, Any]:
        return {"index": self.index, "op": self.name, "call": self.call, "dtype": self.dtype,
                "module": self.module, "phase": self.phase,
                "site": None if self.site is None else {"file": self.site[0], "line": self.site[1],
                                                         "function": self.site[2]},
                "tolerance": {"rtol": self.rtol, "atol": self.atol}, **self.metrics.to_dict(),
                "departs": self.departs}


def compare(reference: str = "float32", tolerances: Optional[Dict[str, Tuple[float, float]]] = None,
            sample: int = 1, ops: Optional[Iterable[str]] = None, modules: Optional[Iterable[str]] = None,
            steps: Optional[int] = None, max_numel: Optional[int] = None, auto_step: bool = False,
            max_records: int = 100_000) -> "Comparison":
    """A :class:`Comparison` (see the module docstring for the options)."""
    return Comparison(reference, tolerances, sample, ops, modules, steps, max_numel, auto_step, max_records)


def compare_model(model, *inputs, backward: bool = True, **options):
    """Run ``model(*inputs)`` (and a backward of the sum of its floating outputs) under :func:`compare`;
    returns the :class:`~ascend_compat.accuracy.report.AccuracyReport`."""
    import torch

    with compare(**options) as comparison:
        out = model(*inputs)
        if backward:
            outs = [o for o in (out if isinstance(out, (tuple, list)) else [getattr(out, "logits", out)])
                    if isinstance(o, torch.Tensor) and o.is_floating_point() and o.requires_grad]
            if outs:
                sum(o.float().sum() for o in outs).backward()
    return comparison.report()


class Comparison(OpObserver):
    """The context manager :func:`compare` returns; :meth:`report` gives the findings."""

    def __init__(self, reference, tolerances, sample, ops, modules, steps, max_numel, auto_step, max_records):
        if reference not in _REFERENCE:
            raise ValueError(f"reference must be float32 or float64, got {reference!r}")
        if sample < 1:
            raise ValueError(f"sample must be at least 1, got {sample}")
        if steps is not None and steps < 1:
            raise ValueError(f"steps must be at least 1, got {steps}")
        self.reference, self.tolerances, self.sample = reference, dict(tolerances or {}), sample
        self.ops = frozenset(ops) if ops else None
        self.modules = tuple(modules) if modules else None
        self.steps, self.max_numel, self.auto_step, self.max_records = steps, max_numel, auto_step, max_records
        self.results: List[OpResult] = []
        self.departures: List[OpResult] = []
        self.compared = 0
        self.seen = 0
        self.step_index = 0
        self.skipped: Dict[str, int] = {}
        self._calls: Dict[str, int] = {}
        self._hooks: List[Any] = []
        self._host = None
        super().__init__(own_thread=True, modules=True, forward_sites=True)

    # ------------------------------------------------------------------ steps
    @property
    def active(self) -> bool:
        return self.steps is None or self.step_index < self.steps

    def step(self) -> None:
        self.step_index += 1
        self.module_stack.clear()

    # ------------------------------------------------------------------ enter / exit
    def __enter__(self) -> "Comparison":
        from torch.optim import optimizer as optim_module

        if self.auto_step:
            self._hooks.append(optim_module.register_optimizer_step_post_hook(lambda *a, **k: self.step()))
        self._host = _host_runner(self)
        self.start_observing()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop_observing(exc_info)
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()

    def watching(self) -> bool:
        return self.active

    def on_op(self, call: OpCall):
        return self._host(call)

    def report(self, backend: str = ""):
        from ascend_compat.accuracy.report import AccuracyReport

        return AccuracyReport(self, backend)

    # ------------------------------------------------------------------ recording
    def wanted(self, name: str, module: str) -> bool:
        if self.ops is not None and name not in self.ops:
            return False
        if self.modules is not None and not module.startswith(self.modules):
            return False
        return True

    def add(self, result: OpResult) -> None:
        self.compared += 1
        if result.departs:
            self.departures.append(result)
        if len(self.results) < self.max_records:
            self.results.append(result)

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


def _host_runner(comparison: Comparison):
    """``run(call)``: the op on the NPU, then on host copies of its inputs, compared."""
    import torch
    from torch.utils._pytree import tree_map

    ref_dtype = getattr(torch, comparison.reference)
    Tensor = torch.Tensor
    nondeterministic = torch.Tag.nondeterministic_seeded

    def host_copy(x):
        if not isinstance(x, Tensor):
            return x
        h = x.detach().to("cpu")
        if h.is_floating_point() and torch.finfo(h.dtype).bits < torch.finfo(ref_dtype).bits:
            h = h.to(ref_dtype)
        return h.clone() if h.data_ptr() == x.data_ptr() else h

    def narrower(npu_t, ref_t) -> bool:
        """The NPU result has fewer bits than the host's, beyond what the reference upcast explains."""
        if not (npu_t.is_floating_point() and ref_t.is_floating_point()):
            return False
        bits = torch.finfo(ref_t.dtype).bits
        return bits > torch.finfo(npu_t.dtype).bits and bits > torch.finfo(ref_dtype).bits

    def run(call: OpCall):
        c = comparison
        func, args, kwargs = call.func, call.args, call.kwargs
        if not call.tensor_on_device:
            return call.run()
        c.seen += 1
        name = call.name
        if func.is_view or nondeterministic in func.tags or "out" in kwargs:
            return call.run()
        module, site = c.origin(call)
        if not c.wanted(name, module):
            return call.run()
        if c.seen % c.sample:
            c.skip("sampling")
            return call.run()
        host_args, host_kwargs = tree_map(host_copy, (args, kwargs))
        out = call.run()
        try:
            ref = func(*host_args, **host_kwargs)
        except Exception as exc:  # the host has no kernel for it (npu:: ops, a dtype): not comparable
            c.skip(f"no host reference ({type(exc).__name__})")
            return out
        mutated = func._schema.is_mutable
        pairs = _pairs((args[0], host_args[0]) if mutated and args else (out, ref))
        worst = None
        for npu_t, ref_t in pairs:
            if c.max_numel is not None and npu_t.numel() > c.max_numel:
                c.skip("max_numel")
                continue
            dtype = str(npu_t.dtype)[6:]
            rtol, atol = tolerance(dtype, c.tolerances)
            m = measure(npu_t, ref_t, rtol, atol)
            if narrower(npu_t, ref_t):  # e.g. float64 asked for, float32 given (torch_npu's downcast)
                m = m.with_dtype_loss(str(ref_t.dtype)[6:])
            if worst is None or (m.departs, m.violation) > (worst[0].departs, worst[0].violation):
                worst = (m, dtype, rtol, atol)
        if worst is not None:
            c._calls[name] = c._calls.get(name, 0) + 1
            m, dtype, rtol, atol = worst
            c.add(OpResult(c.compared + 1, name, c._calls[name], dtype, module, site,
                           "backward" if torch._C._current_autograd_node() is not None else "forward",
                           m, rtol, atol))
        return out

    def _pairs(pair):
        npu, ref = pair
        if isinstance(npu, Tensor) and isinstance(ref, Tensor):
            return [(npu, ref)] if (npu.is_floating_point() or npu.is_complex()) else []
        if isinstance(npu, (list, tuple)) and isinstance(ref, (list, tuple)):
            return [p for a, b in zip(npu, ref) for p in _pairs((a, b))]
        return []

    return run
