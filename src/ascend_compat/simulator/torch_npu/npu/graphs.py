"""NPU graphs of the simulated ``torch.npu``: capture records operators, replay re-runs them in place.

How the emulation works (the decision, since no device graph exists):
- During capture (``with torch.npu.graph(g):`` or ``g.capture_begin()/capture_end()``) every aten
  operator is executed eagerly *and* recorded (operator, arguments, outputs) by a dispatch mode.
  Unlike a real NPU/CUDA graph, the outputs therefore already hold valid values after capture.
- ``replay()`` re-runs the recorded operators on the same tensors: in-place and ``out=`` operators
  mutate their arguments again, and fresh outputs are copied into the tensors created during
  capture. This reproduces the static-memory contract of graphs: refill the captured input
  tensors, replay, read the captured output tensors. Random operators draw new numbers on each
  replay, as graph replays do.
- Not reproduced: speed, memory-pool sharing (pools are accepted and ignored), and the capture
  restrictions of hardware (host syncs inside capture are allowed here). An operator whose output
  shape differs at replay (data-dependent shapes) raises a clear error.
- ``make_graphed_callables`` returns the callables unchanged (eager execution, same numerics).
"""
from __future__ import annotations

import gc
import itertools
import threading
from typing import Any, Callable, Dict, List, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from ._errors import pta_error, unsupported

_pool_ids = itertools.count(1)
_capturing = threading.local()

# allocation-only operators: their contents are undefined, so replay need not redo them
_SKIP_ON_REPLAY = {"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty",
                   "aten::new_empty_strided", "aten::empty_permuted"}


class _Record:
    __slots__ = ("func", "args", "kwargs", "outputs", "fresh")

    def __init__(self, func, args, kwargs, outputs, fresh):
        self.func, self.args, self.kwargs, self.outputs, self.fresh = func, args, kwargs, outputs, fresh


def _fresh_output_flags(func) -> List[bool]:
    """Per schema return: True when the output is a new tensor (no alias annotation)."""
    try:
        return [r.alias_info is None for r in func._schema.returns]
    except AttributeError:
        return []


class _RecordingMode(TorchDispatchMode):
    def __init__(self, graph: "NPUGraph"):
        super().__init__()
        self.graph = graph

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func._schema.name not in _SKIP_ON_REPLAY:
            self.graph._records.append(_Record(func, args, kwargs, out, _fresh_output_flags(func)))
        return out


def _copy_into(old: Any, new: Any, func) -> None:
    if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor):
        if old.shape != new.shape:
            raise RuntimeError(
                f"NPUGraph replay: operator {func} produced shape {tuple(new.shape)} but {tuple(old.shape)} at "
                "capture; operators with data-dependent output shapes cannot be replayed" + pta_error("VALUE")
            )
        with torch.no_grad():
            old.copy_(new)
    elif isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)):
        for o, n in zip(old, new):
            _copy_into(o, n, func)


class NPUGraph:
    """A captured sequence of NPU operators that ``replay()`` re-executes in place (see module doc)."""

    def __init__(self):
        self._records: List[_Record] = []
        self._mode: Optional[_RecordingMode] = None
        self._captured = False
        self._pool = None
        self.auto_dispatch_capture = False

    def capture_begin(self, pool: Any = None, capture_error_mode: str = "global") -> None:
        if capture_error_mode not in ("global", "thread_local", "relaxed"):
            raise RuntimeError(f"Unknown capture error mode. Expected `global`, `thread_local`, or `relaxed`, "
                               f"got {capture_error_mode}" + pta_error("PARAM"))
        if self._mode is not None or self._captured:
            raise RuntimeError("This NPUGraph instance already owns a captured graph. To capture a new graph, "
                               "create a new instance or call reset() first." + pta_error("INTERNAL"))
        self._pool = pool if pool is not None else (0, next(_pool_ids))
        self._mode = _RecordingMode(self)
        self._mode.__enter__()
        _capturing.depth = getattr(_capturing, "depth", 0) + 1

    def capture_end(self) -> None:
        if self._mode is None:
            raise RuntimeError("capture_end() called without a matching capture_begin()" + pta_error("INTERNAL"))
        mode, self._mode = self._mode, None
        mode.__exit__(None, None, None)
        _capturing.depth -= 1
        self._captured = True

    def replay(self) -> None:
        if not self._captured:
            raise RuntimeError("Called NPUGraph::replay without a preceding successful capture."
                               + pta_error("INTERNAL"))
        # the records were taken below autograd (backward and optimizer ops are recorded as plain
        # operators), so replay them there too: no new autograd graph, in-place on leaves allowed
        with torch._C._AutoDispatchBelowADInplaceOrView():
            self._replay_records()

    def _replay_records(self) -> None:
        for rec in self._records:
            new = rec.func(*rec.args, **rec.kwargs)
            if not rec.fresh:
                continue
            olds = rec.outputs if isinstance(rec.outputs, tuple) else (rec.outputs,)
            news = new if isinstance(new, tuple) else (new,)
            for old, fresh_new, is_fresh in zip(olds, news, rec.fresh):
                if is_fresh:
                    _copy_into(old, fresh_new, rec.func)

    def reset(self) -> None:
        self._records.clear()
        self._captured = False

    def pool(self):
        return self._pool

    def enable_debug_mode(self) -> None:
        return None

    def update(self, cpu_update_input: Any) -> None:
        if not self.auto_dispatch_capture:
            raise RuntimeError("The current graph configuration does not support update,"
                               "Try to capture by setting auto_dispatch_capture=True during capture"
                               + pta_error("PARAM"))
        raise unsupported("NPUGraph.update", "updating captured operator arguments needs torch_npu's "
                          "per-operator graph handlers; re-capture the graph instead")

    def debug_dump(self, debug_path: str) -> None:
        raise unsupported("NPUGraph.debug_dump", "there is no device graph to dump")

    @property
    def num_recorded_ops(self) -> int:
        """How many operators the capture recorded (simulator extra, for tests and diagnostics)."""
        return len(self._records)


class graph:
    """``with torch.npu.graph(g, pool=None, stream=None, auto_dispatch_capture=False, capture_error_mode="global"):``"""

    default_capture_stream = None

    def __init__(self, npu_graph: NPUGraph, pool: Any = None, stream: Any = None,
                 auto_dispatch_capture: bool = False, capture_error_mode: str = "global"):
        from .streams import Stream

        if self.__class__.default_capture_stream is None:
            self.__class__.default_capture_stream = Stream()
        self.pool = () if pool is None else (pool,)
        self.capture_stream = stream if stream is not None else self.__class__.default_capture_stream
        self.npu_graph = npu_graph
        self.npu_graph.auto_dispatch_capture = auto_dispatch_capture
        self.capture_error_mode = capture_error_mode
        self._stream_ctx = None

    def __enter__(self):
        from .streams import StreamContext

        gc.collect()
        self._stream_ctx = StreamContext(self.capture_stream)
        self._stream_ctx.__enter__()
        self.npu_graph.capture_begin(*self.pool, capture_error_mode=self.capture_error_mode)

    def __exit__(self, exc_type, exc_value, traceback):
        try:
            self.npu_graph.capture_end()
        finally:
            self._stream_ctx.__exit__(exc_type, exc_value, traceback)


def is_current_stream_capturing() -> bool:
    """True while an NPUGraph capture is under way in this thread."""
    return getattr(_capturing, "depth", 0) > 0


def graph_pool_handle():
    """An opaque memory-pool token (accepted and ignored by the simulated capture)."""
    return (0, next(_pool_ids))


def make_graphed_callables(callables: Any, sample_args: Any, num_warmup_iters: int = 3,
                           allow_unused_input: bool = False, pool: Any = None):
    """Emulated: returns the callables unchanged, so they run eagerly with identical numerics."""
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    if len(callables) != len(sample_args):
        raise AssertionError("make_graphed_callables: callables and sample_args must have the same length")
    for c, args in zip(callables, sample_args):
        if isinstance(c, torch.nn.Module) and (c._backward_hooks or c._forward_hooks or c._forward_pre_hooks):
            raise AssertionError("Modules must not have hooks registered at the time they are passed. "
                                 "However, registering hooks on modules after passing them through "
                                 "make_graphed_callables is allowed.")
        flat, _ = tree_flatten(args)
        if not all(isinstance(a, torch.Tensor) for a in flat):
            raise AssertionError("In the beta API, sample_args for each callable must contain only Tensors. "
                                 "Other types are not allowed.")
    return callables[0] if just_one else callables


def _graph_task_refused(name: str):
    def refuse(*args: Any, **kwargs: Any):
        raise unsupported(name, "graph task groups update parameters inside a captured device graph; the "
                          "simulated NPUGraph re-runs recorded operators instead, so re-capture the graph")

    refuse.__name__ = name
    return refuse


graph_task_group_begin = _graph_task_refused("graph_task_group_begin")
graph_task_group_end = _graph_task_refused("graph_task_group_end")
graph_task_update_begin = _graph_task_refused("graph_task_update_begin")
graph_task_update_end = _graph_task_refused("graph_task_update_end")


def super_kernel_scope_begin(scope_name: Optional[str] = None) -> None:
    """A fusion hint for graph compilation: accepted, no effect on simulated execution."""
    return None


def super_kernel_scope_end(scope_name: Optional[str] = None) -> None:
    return None


_handlers: Dict[str, type] = {}


class NpuGraphOpHandler:
    """Base class of per-operator NPUGraph handlers (registered but never needed by the simulated replay)."""

    UPDATE_SPECS: tuple = ()


def register_npu_graph_handler(op_names: Any) -> Callable[[type], type]:
    """Class decorator registering a handler for ``op_names`` (kept in a registry, as in torch_npu)."""

    def decorator(cls: type) -> type:
        names = op_names if isinstance(op_names, (list, tuple)) else [op_names]
        for name in names:
            _handlers[name] = cls
        return cls

    return decorator
