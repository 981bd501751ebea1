"""``torch_npu.profiler`` of the stand-in: torch_npu's profiler API over ``torch.profiler``.

``profile``, ``schedule``, ``tensorboard_trace_handler``, ``ProfilerActivity`` (CPU, NPU),
``ProfilerAction``, ``_ExperimentalConfig``, ``ProfilerLevel``, ``AiCMetrics``, ``ExportType``,
``HostSystem``, ``supported_*`` with torch_npu 2.14's names, arguments and constant values. The simulated
NPU computes on the host, so ``ProfilerActivity.NPU`` records the host (CPU) activity of npu ops: traces
show every op (``aten::add`` on npu tensors) with host timings, and ``on_trace_ready`` handlers run as
usual. ``tensorboard_trace_handler`` writes torch's Chrome trace (``<worker>.<time>.pt.trace.json``) into
``dir_name``, not torch_npu's ``*_ascend_pt`` directory (no CANN msprof data exists); ``_ExperimentalConfig``
is validated and kept but has no hardware counters to select. ``custom_trace_id_callback`` names each
recording as torch_npu does (its id goes into the trace's metadata as ``trace_id``).
"""
from __future__ import annotations

import enum
import os
import socket
import time
import uuid
from typing import Any, Callable, Iterable, Optional

import torch
from torch.profiler import ProfilerAction

from ascend_compat.simulator._error_code import prof_error

__all__ = ["profile", "ProfilerActivity", "supported_activities", "tensorboard_trace_handler", "schedule",
           "ProfilerAction", "_ExperimentalConfig", "supported_profiler_level", "supported_ai_core_metrics",
           "supported_export_type", "ProfilerLevel", "AiCMetrics", "ExportType", "HostSystem"]


class ProfilerActivity(enum.Enum):
    """torch_npu's activities: ``CPU`` and ``NPU`` (both record host activity on the simulator)."""

    CPU = 0
    NPU = 1


def supported_activities():
    return {ProfilerActivity.CPU, ProfilerActivity.NPU}


class ProfilerLevel:
    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"
    Level_none = "Level_none"


class AiCMetrics:
    PipeUtilization = "ACL_AICORE_PIPE_UTILIZATION"
    ArithmeticUtilization = "ACL_AICORE_ARITHMETIC_UTILIZATION"
    Memory = "ACL_AICORE_MEMORY_BANDWIDTH"
    MemoryL0 = "ACL_AICORE_L0B_AND_WIDTH"
    MemoryUB = "ACL_AICORE_MEMORY_UB"
    ResourceConflictRatio = "ACL_AICORE_RESOURCE_CONFLICT_RATIO"
    L2Cache = "ACL_AICORE_L2_CACHE"
    MemoryAccess = "ACL_AICORE_MEMORY_ACCESS"
    AiCoreNone = "ACL_AICORE_NONE"


class ExportType:
    Db = "db"
    Text = "text"


class HostSystem:
    CPU = "cpu"
    MEM = "mem"
    DISK = "disk"
    NETWORK = "network"
    OSRT = "osrt"
    NUMA = "numa"


def supported_profiler_level():
    return {ProfilerLevel.Level0, ProfilerLevel.Level1, ProfilerLevel.Level2, ProfilerLevel.Level_none}


def supported_ai_core_metrics():
    return {v for k, v in vars(AiCMetrics).items() if not k.startswith("_")}


def supported_export_type():
    return {ExportType.Db, ExportType.Text}


class _ExperimentalConfig:
    """torch_npu's experimental profiler options; checked like torch_npu checks them, then kept."""

    def __init__(self, profiler_level: str = ProfilerLevel.Level0, aic_metrics: str = AiCMetrics.PipeUtilization,
                 l2_cache: bool = False, msprof_tx: bool = False, mstx: bool = False, data_simplification: bool = True,
                 record_op_args: bool = False, op_attr: bool = False, gc_detect_threshold: Optional[float] = None,
                 export_type=ExportType.Text, host_sys: Optional[list] = None,
                 mstx_domain_include: Optional[list] = None, mstx_domain_exclude: Optional[list] = None,
                 sys_io: bool = False, sys_interconnection: bool = False):
        if profiler_level not in supported_profiler_level():
            raise ValueError(f"Invalid profiler_level {profiler_level!r}; expected one of "
                             f"{sorted(supported_profiler_level())}" + prof_error("PARAM"))
        if aic_metrics not in supported_ai_core_metrics():
            raise ValueError(f"Invalid aic_metrics {aic_metrics!r}" + prof_error("PARAM"))
        types = [export_type] if isinstance(export_type, str) else list(export_type or [])
        if not types or any(t not in supported_export_type() for t in types):
            raise ValueError(f"Invalid export_type {export_type!r}; expected 'text' or 'db'" + prof_error("PARAM"))
        if gc_detect_threshold is not None and gc_detect_threshold < 0:
            raise ValueError("gc_detect_threshold must be non-negative" + prof_error("PARAM"))
        self._profiler_level, self._aic_metrics, self._l2_cache = profiler_level, aic_metrics, l2_cache
        self._msprof_tx, self._mstx, self._data_simplification = msprof_tx, mstx, data_simplification
        self.record_op_args, self._op_attr, self._gc_detect_threshold = record_op_args, op_attr, gc_detect_threshold
        self._export_type = types
        self._host_sys = list(host_sys or [])

    @property
    def export_type(self):
        return self._export_type

    @property
    def with_gc(self) -> bool:
        return self._gc_detect_threshold is not None

    @property
    def gc_detect_threshold(self):
        return self._gc_detect_threshold


def schedule(*, wait: int, active: int, warmup: int = 0, repeat: int = 0, skip_first: int = 0) -> Callable:
    """torch_npu's ``Schedule(wait, active, warmup=0, repeat=0, skip_first=0)``: torch's schedule."""
    return torch.profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first)


def tensorboard_trace_handler(dir_name: Optional[str] = None, worker_name: Optional[str] = None,
                              analyse_flag: bool = True, async_mode: bool = False) -> Callable:
    """Write each finished trace into ``dir_name`` (default: ``$ASCEND_WORK_PATH/profiling_data`` or
    ``./``) as torch's Chrome trace, named ``<worker_name or host_pid>.<time>.pt.trace.json``."""
    if dir_name is None:
        work = os.environ.get("ASCEND_WORK_PATH")
        dir_name = os.path.join(work, "profiling_data") if work else "./"
    worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
    return torch.profiler.tensorboard_trace_handler(dir_name, worker_name=worker)


def _torch_activities(activities: Optional[Iterable[Any]]):
    if activities is None:
        return [torch.profiler.ProfilerActivity.CPU]
    wanted = set(activities)
    bad = [a for a in wanted if a not in supported_activities()]
    if bad:
        raise ValueError(f"Invalid activities {bad}: use torch_npu.profiler.ProfilerActivity.CPU/NPU"
                         + prof_error("PARAM"))
    return [torch.profiler.ProfilerActivity.CPU]


class profile(torch.profiler.profile):  # noqa: N801 (torch_npu's name)
    """``torch_npu.profiler.profile``: torch's profiler with torch_npu's arguments (module docstring)."""

    def __init__(self, *, activities: Optional[Iterable[ProfilerActivity]] = None,
                 schedule: Optional[Callable[[int], ProfilerAction]] = None,
                 on_trace_ready: Optional[Callable[..., Any]] = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Optional[_ExperimentalConfig] = None,
                 execution_trace_observer=None, custom_trace_id_callback=None, use_cuda: Optional[bool] = None):
        if experimental_config is not None and not isinstance(experimental_config, _ExperimentalConfig):
            raise TypeError("experimental_config must be a torch_npu.profiler._ExperimentalConfig"
                            + prof_error("TYPE"))
        self.experimental_config = experimental_config or _ExperimentalConfig()
        super().__init__(activities=_torch_activities(activities), schedule=schedule, on_trace_ready=on_trace_ready,
                         record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules,
                         execution_trace_observer=execution_trace_observer)
        # not torch's attribute of the same name: torch hands that one's result to Kineto unchecked
        self._trace_id_callback = custom_trace_id_callback
        self.trace_id = ""

    def set_custom_trace_id_callback(self, callback: Callable[[], str]) -> None:
        self._trace_id_callback = callback

    def start_trace(self) -> None:
        """Start recording, with a new trace id (torch_npu writes it into the trace's metadata)."""
        super().start_trace()
        self.trace_id = self.create_trace_id()
        self.add_metadata("trace_id", self.trace_id)

    def create_trace_id(self) -> str:
        """The callback's id if it is callable and returns a ``str`` of at most
        :data:`MAX_TRACE_ID_LEN` characters; otherwise, with torch_npu's warning, a random 32-digit
        hex id (also the id without a callback)."""
        callback = self._trace_id_callback
        if not callback:
            return _default_trace_id()
        if not callable(callback):
            _warn("Parameter custom_trace_id_callback is not callable, reset it to default.")
            return _default_trace_id()
        try:
            trace_id = callback()
            if isinstance(trace_id, str) and len(trace_id) <= MAX_TRACE_ID_LEN:
                return trace_id
            _warn(f"Parameter custom_trace_id_callback should return str(max length: {MAX_TRACE_ID_LEN}), "
                  "reset it to default.")
        except Exception as exc:  # torch_npu catches everything the user's callback raises
            _warn(f"Parameter custom_trace_id_callback raised an exception: {exc}, reset it to default.")
        return _default_trace_id()


#: torch_npu's limit on a custom trace id's length
MAX_TRACE_ID_LEN = 1024


def _default_trace_id() -> str:
    return f"{uuid.uuid4().int:032X}"


def _warn(message: str) -> None:
    """torch_npu's profiler warning line (printed to stdout, as its ``print_warn_msg`` does)."""
    stamp = time.strftime("[%Y-%m-%d %H:%M:%S]", time.localtime())
    print(f"{stamp} [WARNING] [{os.getpid()}] profiler.py: {message}", flush=True)
