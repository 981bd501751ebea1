"""Mirror every NPU op on a CPU reference and find the first one whose result departs.

:func:`compare` returns a :class:`Comparison`, a context manager around a step (or a whole script,
which is what ``ascend-compat compare`` does). Inside it a ``TorchDispatchMode`` sees every op with an
NPU tensor input, forward and backward: it copies the op's inputs to the host (floating inputs
upcast to float32, or float64 with ``reference="float64"``), runs the op on the NPU as usual, runs
the same op on the host copies, and compares each floating output (:mod:`.metrics`). Each op is
judged on the NPU's own inputs, so errors do not accumulate: the first departing op is where the
NPU run starts to differ. Random ops, views and ``out=`` calls are not compared.

Backward ops are reported where their forward op was written: while the comparison is active a
``TorchFunctionMode`` tags each new autograd node (``grad_fn.metadata``) with the module path and
user source line of the call that created it, and a backward op takes the tags of the node the
autograd engine is running (``torch._C._current_autograd_node()``). Nodes created before the
comparison started, or inside composite functions below the tagged call, fall back to the module
and line current when the backward runs.

Cost controls: ``sample=k`` compares every k-th op call; ``ops`` / ``modules`` restrict it (op names
such as ``aten::gelu``; module path prefixes such as ``Llama.layers.0``); ``steps=n`` compares the
first n steps only (a step ends at ``Comparison.step()`` or, with ``auto_step``, at each
``optimizer.step()``); ``max_numel`` skips outputs larger than that; ``max_records`` caps how many
per-op results are kept (departures are always kept). Nothing is retained but numbers.

Works on real torch_npu and on the simulated NPU alike (it relies on nothing of the simulator).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ascend_compat.accuracy.metrics import Metrics, measure, tolerance

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


class Comparison:
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
        self._mode = None
        self._tagger = None
        self._hooks: List[Any] = []
        self._modules = None
        self._thread = None

    # ------------------------------------------------------------------ steps
    @property
    def active(self) -> bool:
        return self.steps is None or self.step_index < self.steps

    def step(self) -> None:
        self.step_index += 1
        if self._modules is not None:
            self._modules.clear()

    # ------------------------------------------------------------------ enter / exit
    def __enter__(self) -> "Comparison":
        from torch.optim import optimizer as optim_module

        from ascend_compat.coverage._context import ModuleStack

        self._thread = threading.get_ident()
        self._modules = ModuleStack().install()
        if self.auto_step:
            self._hooks.append(optim_module.register_optimizer_step_post_hook(lambda *a, **k: self.step()))
        self._tagger = _make_tagger(self)
        self._tagger.__enter__()
        self._mode = _make_mode(self)
        self._mode.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        mode, self._mode = self._mode, None
        if mode is not None:
            mode.__exit__(*exc_info)
        tagger, self._tagger = self._tagger, None
        if tagger is not None:
            tagger.__exit__(*exc_info)
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()
        if self._modules is not None:
            self._modules.remove()

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


_WHERE = "ascend_compat.accuracy.where"  # grad_fn.metadata key: (module path, user frame)


def _make_tagger(comparison: Comparison):
    """A ``TorchFunctionMode`` tagging new autograd nodes with their module and source line."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._pytree import tree_flatten

    from ascend_compat.coverage._routing import user_frame

    Tensor = torch.Tensor

    class _Tagger(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            res = func(*args, **(kwargs or {}))
            c = comparison
            if not c.active or not torch.is_grad_enabled() or threading.get_ident() != c._thread:
                return res
            where = None
            for t in tree_flatten(res)[0]:
                node = t.grad_fn if isinstance(t, Tensor) else None
                if node is not None and _WHERE not in node.metadata:
                    if where is None:
                        where = (c._modules.current(), user_frame(2))
                    node.metadata[_WHERE] = where
            return res

    return _Tagger()


def _make_mode(comparison: Comparison):
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten, tree_map

    from ascend_compat.coverage._routing import qualified, user_frame

    device = torch._C._get_privateuse1_backend_name()
    ref_dtype = getattr(torch, comparison.reference)
    Tensor = torch.Tensor
    current_node = torch._C._current_autograd_node
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

    def on_device(flat) -> bool:
        return any(isinstance(t, Tensor) and t.device.type == device for t in flat)

    class _CompareMode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            c = comparison
            flat, _ = tree_flatten((args, kwargs))
            if not c.active or threading.get_ident() != c._thread or not on_device(flat):
                return func(*args, **kwargs)
            c.seen += 1
            name = qualified(func)
            if func.is_view or nondeterministic in func.tags or "out" in kwargs:
                return func(*args, **kwargs)
            node = current_node()
            where = node.metadata.get(_WHERE) if node is not None else None
            module = where[0] if where is not None else c._modules.current()
            if not c.wanted(name, module):
                return func(*args, **kwargs)
            if c.seen % c.sample:
                c.skip("sampling")
                return func(*args, **kwargs)
            host_args, host_kwargs = tree_map(host_copy, (args, kwargs))
            out = func(*args, **kwargs)
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
                site = where[1] if where is not None else user_frame(2)
                c.add(OpResult(c.compared + 1, name, c._calls[name], dtype, module, site,
                               "backward" if node is not None else "forward", m, rtol, atol))
            return out

    def _pairs(pair):
        npu, ref = pair
        if isinstance(npu, Tensor) and isinstance(ref, Tensor):
            return [(npu, ref)] if (npu.is_floating_point() or npu.is_complex()) else []
        if isinstance(npu, (list, tuple)) and isinstance(ref, (list, tuple)):
            return [p for a, b in zip(npu, ref) for p in _pairs((a, b))]
        return []

    return _CompareMode()
