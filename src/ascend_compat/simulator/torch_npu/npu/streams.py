"""Streams and events of the simulated ``torch.npu``: real ``torch.Stream``/``torch.Event`` subclasses.

The simulator executes every operator synchronously on the host, so a stream is bookkeeping only:
``query()`` is always True, ``synchronize()`` returns at once, waits are satisfied immediately.
What is faithful is the API: ``torch.npu.Stream`` is a ``torch.Stream`` (``Tensor.record_stream``
accepts it), each stream has its own id and priority, the current stream is per thread and per
device (``stream()``/``set_stream``/``current_stream``/``default_stream``), and events measure
``elapsed_time`` in milliseconds of host wall-clock time between their ``record`` calls.
Races that exist on real hardware between streams are therefore NOT reproduced.
"""
from __future__ import annotations

import ctypes
import itertools
import threading
import time
from typing import Any, Dict, Optional

import torch

from . import device as _dev
from ._errors import pta_error

_NPU_TYPE = 20  # c10::DeviceType::PrivateUse1, which torch.Stream takes as its int device_type
_ids = itertools.count(1)  # stream id 0 is the default stream of each device
_ids_lock = threading.Lock()
_priorities: Dict[tuple, int] = {}
_tls = threading.local()


def _handle(device_index: int, stream_id: int) -> int:
    # a stable, non-zero fake "aclrtStream" handle, as torch_npu exposes npu_stream
    return 0x5A000000 + (device_index << 16) + stream_id


def _new_stream_id(device_index: int, priority: int) -> int:
    with _ids_lock:
        sid = next(_ids)
    _priorities[(device_index, sid)] = priority
    return sid


class Stream(torch.Stream):
    """``torch.npu.Stream(device=None, priority=0)``: a new stream on ``device`` (default: current)."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs):
        if "stream_id" in kwargs:  # rebuilding a handle to an existing stream
            return super().__new__(
                cls, stream_id=kwargs["stream_id"], device_index=kwargs["device_index"],
                device_type=kwargs.get("device_type", _NPU_TYPE),
            )
        idx = _dev._get_device_index(device, optional=True) if device is not None else _dev.current_device()
        if idx < 0:
            idx = _dev.current_device()
        _dev._lazy_init()
        _dev._state().check_index(idx)
        sid = _new_stream_id(idx, int(priority))
        return super().__new__(cls, stream_id=sid, device_index=idx, device_type=_NPU_TYPE)

    @property
    def priority(self) -> int:
        return _priorities.get((self.device_index, self.stream_id), 0)

    @property
    def npu_stream(self) -> int:
        return _handle(self.device_index, self.stream_id)

    @property
    def _as_parameter_(self):
        return ctypes.c_void_p(self.npu_stream)

    def wait_event(self, event) -> None:
        event.wait(self)

    def wait_stream(self, stream) -> None:
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        if event is None:
            event = Event()
        event.record(self)
        return event

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def set_data_preprocess_stream(self, is_data_preprocess_stream: bool = False) -> None:
        return None

    def __enter__(self):
        self._ctx = StreamContext(self)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)
        return False

    def __eq__(self, other):
        if isinstance(other, torch.Stream):
            return super().__eq__(other)
        return False

    # equal to a plain torch.Stream with the same ids, so hash like one too
    __hash__ = torch.Stream.__hash__

    def __repr__(self):
        return f"<torch_npu.npu.{type(self).__name__} device={self.device} npu_stream={self.npu_stream:#x}>"


class SyncLaunchStream(Stream):
    """A stream that bypasses the task queue on real hardware; identical to ``Stream`` when simulated."""


class ExternalStream(Stream):
    """Wraps a stream pointer created elsewhere; like torch_npu, sync/query/event APIs on it raise."""

    def __new__(cls, stream_ptr: int, device: Any = None, **kwargs):
        idx = _dev._get_device_index(device, optional=True) if device is not None else _dev.current_device()
        obj = super().__new__(cls, stream_id=_new_stream_id(idx, 0), device_index=idx, device_type=_NPU_TYPE)
        obj._external_ptr = int(stream_ptr)
        return obj

    @property
    def npu_stream(self) -> int:
        return self._external_ptr

    def _refuse(self, what: str):
        raise RuntimeError(
            f"{what} is not supported on an ExternalStream: the caller must manage the external stream"
            + pta_error("NOT_SUPPORT")
        )

    def synchronize(self):
        self._refuse("synchronize()")

    def query(self):
        self._refuse("query()")

    def record_event(self, event=None):
        self._refuse("record_event()")

    def wait_event(self, event):
        self._refuse("wait_event()")

    def wait_stream(self, stream):
        self._refuse("wait_stream()")


def _check_not_external(stream, what: str) -> None:
    if isinstance(stream, ExternalStream):
        stream._refuse(what)


class Event(torch.Event):
    """``torch.npu.Event(enable_timing=False, blocking=False, interprocess=False)``.

    ``record`` stamps the host clock (work before it has already finished, since execution is
    synchronous); ``elapsed_time`` returns milliseconds between two recorded timing events.
    """

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        index = max(_dev.current_device(), 0)
        obj = super().__new__(
            cls, device=torch.device("npu", index), enable_timing=enable_timing,
            blocking=blocking, interprocess=interprocess,
        )
        obj._device_index = index
        obj._timing = bool(enable_timing)
        obj._stamp = None
        obj._recorded_device = None
        return obj

    def record(self, stream=None) -> None:
        if stream is None:
            stream = current_stream()
        _check_not_external(stream, "Event.record()")
        if self._recorded_device is not None and stream.device_index != self._recorded_device:
            raise RuntimeError(
                f"Event device {self._recorded_device} does not match recording stream's device "
                f"{stream.device_index}." + pta_error("PARAM")
            )
        self._recorded_device = stream.device_index
        self._stamp = time.perf_counter()

    def wait(self, stream=None) -> None:
        if stream is None:
            stream = current_stream()
        _check_not_external(stream, "Event.wait()")

    @property
    def device(self) -> torch.device:
        """The device of the stream the event was last recorded on (else the device current at creation)."""
        index = self._recorded_device if self._recorded_device is not None else self._device_index
        return torch.device("npu", index)

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end_event) -> float:
        if not (getattr(self, "_timing", False) and getattr(end_event, "_timing", False)):
            raise RuntimeError(
                "Both events must be created with argument 'enable_timing=True'." + pta_error("PARAM")
            )
        if self._stamp is None or getattr(end_event, "_stamp", None) is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time." + pta_error("PARAM"))
        return (end_event._stamp - self._stamp) * 1000.0

    def recorded_time(self) -> int:
        """Record time stamp in microseconds of the host's performance counter."""
        if self._stamp is None:
            raise RuntimeError("Event must be recorded before getting recorded timestamp." + pta_error("PARAM"))
        return int(self._stamp * 1e6)

    @property
    def npu_event(self) -> int:
        return 0 if self._stamp is None else 0x5E000000 + (id(self) & 0xFFFFFF)

    @property
    def _as_parameter_(self):
        return ctypes.c_void_p(self.npu_event)

    def ipc_handle(self):
        raise RuntimeError("Event.ipc_handle: interprocess events are not supported by the simulated NPU"
                           + pta_error("NOT_SUPPORT"))

    @classmethod
    def from_ipc_handle(cls, device, handle):
        raise RuntimeError("Event.from_ipc_handle: interprocess events are not supported by the simulated NPU"
                           + pta_error("NOT_SUPPORT"))

    def __repr__(self):
        if self.npu_event:
            return f"<torch_npu.npu.{type(self).__name__} {self.npu_event:#x}>"
        return f"<torch_npu.npu.{type(self).__name__} uninitialized>"


class ExternalEvent(Event):
    """An event that may be waited on before it is recorded; ``reset`` clears it for reuse."""

    def __new__(cls):
        return super().__new__(cls, enable_timing=False, blocking=False, interprocess=False)

    def reset(self, stream=None) -> None:
        self._stamp = None


# ---------------------------------------------------------------------------- current-stream state


def _current_map() -> Dict[int, Stream]:
    m = getattr(_tls, "streams", None)
    if m is None:
        m = _tls.streams = {}
    return m


def default_stream(device: Any = None) -> Stream:
    """The default stream (id 0) of ``device`` (default: current device)."""
    _dev._lazy_init()
    idx = _dev._get_device_index(device, optional=True)
    return Stream(stream_id=0, device_index=idx, device_type=_NPU_TYPE)


def current_stream(device: Any = None) -> Stream:
    """The stream selected on ``device`` in this thread (the default stream unless changed)."""
    _dev._lazy_init()
    idx = _dev._get_device_index(device, optional=True)
    return _current_map().get(idx) or default_stream(idx)


def set_stream(stream) -> None:
    """Select ``stream`` as current on its device; None is a no-op."""
    if stream is None:
        return
    if stream.device_type != _NPU_TYPE and getattr(stream.device, "type", None) != "npu":
        raise ValueError(f"Expected a npu stream, but got: {stream}" + pta_error("VALUE"))
    if not isinstance(stream, Stream):
        stream = Stream(stream_id=stream.stream_id, device_index=stream.device_index, device_type=_NPU_TYPE)
    _current_map()[stream.device_index] = stream


class StreamContext:
    """Select a stream (and its device) inside a ``with`` block; None is a no-op."""

    def __init__(self, stream_ctx: Optional[Stream]):
        self.stream = stream_ctx
        self.idx = _dev._get_device_index(None, True)
        self.src_prev_stream = None
        self.dst_prev_stream = None
        self._device_ctx = None

    def __enter__(self):
        cur = self.stream
        if cur is None or self.idx == -1:
            return
        self.src_prev_stream = current_stream()
        if self.src_prev_stream.device != cur.device:
            self.dst_prev_stream = current_stream(cur.device)
            self._device_ctx = _dev.device(cur.device)
            self._device_ctx.__enter__()
        set_stream(cur)

    def __exit__(self, *exc):
        cur = self.stream
        if cur is None or self.idx == -1:
            return
        if self._device_ctx is not None:
            set_stream(self.dst_prev_stream)
            self._device_ctx.__exit__(*exc)
            self._device_ctx = None
        set_stream(self.src_prev_stream)


def stream(stream) -> StreamContext:
    """``with torch.npu.stream(s):`` selects ``s`` inside the block."""
    return StreamContext(stream)


_stream_limits: Dict[tuple, Dict[str, int]] = {}


def _check_stream_arg(stream) -> None:
    if stream is None:
        raise AssertionError("stream cannot be None" + pta_error("PARAM"))
    if not isinstance(stream, Stream):
        raise AssertionError(f"stream should be torch_npu.npu.Stream, could not be {type(stream)}" + pta_error("TYPE"))


def set_stream_limit(stream, cube_num: int = -1, vector_num: int = -1) -> None:
    """Record per-stream core limits (the simulator has no cores to restrict)."""
    _check_stream_arg(stream)
    key = (stream.device_index, stream.stream_id)
    limits = _stream_limits.setdefault(key, {})
    if cube_num != -1:
        limits["cube_core_num"] = int(cube_num)
    if vector_num != -1:
        limits["vector_core_num"] = int(vector_num)


def reset_stream_limit(stream) -> None:
    _check_stream_arg(stream)
    _stream_limits.pop((stream.device_index, stream.stream_id), None)


def get_stream_limit(stream) -> Dict[str, int]:
    """The recorded limits, defaulting to the device's limits (see ``get_device_limit``)."""
    _check_stream_arg(stream)
    from . import config as _cfg

    base = _cfg.get_device_limit(stream.device_index)
    base.update(_stream_limits.get((stream.device_index, stream.stream_id), {}))
    return base
