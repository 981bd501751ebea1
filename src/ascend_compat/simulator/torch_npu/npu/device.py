"""Device management of the simulated ``torch.npu``: count, selection, init and fork safety.

Behaviour follows torch_npu 2.x (``torch_npu/npu/__init__.py`` and ``npu/utils.py``):
- ``ASCEND_RT_VISIBLE_DEVICES`` is read up to the first character that is not a digit or comma; the
  ids must be strictly ascending (otherwise no device is visible) and ids at or beyond the node's
  physical count end the list (:mod:`ascend_compat.knowledge.visible_devices`, which doctor and the
  shim read too).
- after a fork of an initialised process, NPU calls in the child raise torch_npu's
  "Cannot re-initialize NPU in forked subprocess" error.
The node's device count and the current device live in the simulator core (``simulator._state``);
properties and SoC queries are in :mod:`.properties`, runtime switches in :mod:`.runtime`.
"""
from __future__ import annotations

import os
import re
import threading
from typing import Any, Callable, List, Optional, Tuple

import torch

from ascend_compat.knowledge import visible_devices

from ._errors import pta_error
from .soc_specs import SocSpec, soc_spec

# ---------------------------------------------------------------------------- pure helpers


#: ASCEND_RT_VISIBLE_DEVICES read as torch_npu reads it: the knowledge layer's one parser
parse_visible_devices = visible_devices.ascend_ids
visible_device_count = visible_devices.ascend_count


def parse_capability(env_value: Optional[str]) -> Optional[Tuple[int, int]]:
    """``"8.0"`` -> ``(8, 0)``; anything not ``<digits>.<digits>`` -> None."""
    if not env_value:
        return None
    match = re.match(r"^(\d+)\.(\d+)$", env_value)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2))


# ---------------------------------------------------------------------------- simulator state access


def _state():
    from ascend_compat.simulator import _state as state

    return state


def config():
    """The simulator's SimConfig (devices, float64, memory_capacity, soc, torch_npu_version)."""
    return _state().config


def current_soc() -> SocSpec:
    return soc_spec(getattr(config(), "soc", None))


def current_device_or_minus_one() -> int:
    try:
        return int(_state().current_device())
    except Exception:
        return -1


# ---------------------------------------------------------------------------- init / fork

_initialized = False
_in_bad_fork = False
_original_pid: Optional[int] = None
_init_lock = threading.Lock()

BAD_FORK_MESSAGE = (
    "Cannot re-initialize NPU in forked subprocess. To use NPU with "
    "multiprocessing, you must use the 'spawn' start method"
)


class _DeferredNpuCallError(Exception):
    pass


def _is_in_bad_fork() -> bool:
    """True in a child forked from a process whose NPU state was initialised (torch hook)."""
    return _in_bad_fork


def is_initialized() -> bool:
    """Whether the NPU state has been initialised (and this is not a bad fork)."""
    return _initialized and not _in_bad_fork


def _lazy_call(cb: Callable[[], None]) -> None:
    """Run ``cb`` now. torch_npu queues such calls until the device is initialised; simulated devices
    are ready from install on, and running at once keeps ``torch.manual_seed`` effective even when no
    torch.npu function has triggered initialisation yet."""
    cb()


def _lazy_init() -> None:
    """Initialise the simulated NPU state once; raises in a forked child of an initialised parent."""
    global _initialized, _original_pid
    if _initialized:
        return
    with _init_lock:
        if _initialized:
            return
        if _in_bad_fork:
            raise RuntimeError(BAD_FORK_MESSAGE)
        _original_pid = os.getpid()
        _initialized = True


def _forget_install_probes() -> None:
    """Undo the initialisation that ``install()``'s self-checks caused (torch's DLPack import runs
    ``_lazy_init``): as after ``import torch_npu``, the state is initialised by the first real use,
    which decides whether a forked child may use the device."""
    global _initialized, _original_pid, _cached_device_count
    with _init_lock:
        _initialized = False
        _original_pid = None
        _cached_device_count = None


def init() -> None:
    """Initialise the NPU state explicitly (normally done on demand)."""
    _lazy_init()


def _after_fork_in_child() -> None:
    global _initialized, _in_bad_fork
    if _initialized and _original_pid != os.getpid():
        _initialized = False
        _in_bad_fork = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# ---------------------------------------------------------------------------- device index handling


def _get_device_index(device: Any, optional: bool = False, allow_cpu: bool = False) -> int:
    """torch_npu's ``_get_device_index``: int as is; str/torch.device must be npu (or cpu if allowed);
    an index-less npu device or None means the current device when ``optional``."""
    if isinstance(device, bool):
        raise ValueError(f"Expected a npu device, but got: {device}" + pta_error("VALUE"))
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if allow_cpu:
            if device.type not in ("npu", "cpu"):
                raise ValueError(f"Expected a npu or cpu device, but got: {device}" + pta_error("VALUE"))
            if device.type == "cpu":
                return -1
        elif device.type != "npu":
            raise ValueError(f"Expected a npu device, but got: {device}" + pta_error("VALUE"))
        if device.index is not None:
            return device.index
        device = None
    if isinstance(device, _DeviceContext):
        return device.idx
    if device is None:
        if optional:
            return int(_state().current_device())
        raise ValueError(
            f"Expected a torch.device with a specified index or an integer, but got:{device}" + pta_error("VALUE")
        )
    raise ValueError(f"Expected a npu device, but got: {device!r}" + pta_error("VALUE"))


def _check_valid(device_id: int, what: str = "Invalid device id") -> None:
    if device_id < 0 or device_id >= device_count():
        raise AssertionError(what + pta_error("VALUE"))


# ---------------------------------------------------------------------------- the public functions


def is_available() -> bool:
    """True when at least one simulated device is visible."""
    return device_count() > 0


_cached_device_count: Optional[int] = None


def base_capacity(index: int) -> int:
    """The device's total memory: the configured capacity, else the SoC's HBM size."""
    configured = getattr(config(), "memory_capacity", None)
    if configured is not None:
        return int(configured)
    return current_soc().total_memory


def device_count() -> int:
    """Number of visible simulated NPUs: the node's devices filtered by ``ASCEND_RT_VISIBLE_DEVICES``.

    As in torch_npu, the count is re-read until the NPU state is initialised and cached afterwards.
    """
    global _cached_device_count
    if _cached_device_count is not None:
        return _cached_device_count
    count = visible_device_count(os.environ.get("ASCEND_RT_VISIBLE_DEVICES"), int(_state().device_count()))
    if _initialized:
        _cached_device_count = count
    return count


def current_device() -> int:
    """Index of the current device (per thread)."""
    _lazy_init()
    return int(_state().current_device())


def set_device(device: Any) -> None:
    """Select the current device; a negative index is a no-op, as in torch_npu."""
    idx = _get_device_index(device, optional=True)
    if idx >= 0:
        if idx >= device_count():
            raise RuntimeError(
                f"Invalid device ID. npu:{idx} is not visible: {device_count()} device(s) are visible "
                f"(ASCEND_RT_VISIBLE_DEVICES={os.environ.get('ASCEND_RT_VISIBLE_DEVICES')!r})" + pta_error("PARAM")
            )
        _state().set_device(idx)


def synchronize(device: Any = None) -> None:
    """Wait for all work on ``device``: the simulator executes synchronously, so only checks the index."""
    _lazy_init()
    idx = _get_device_index(device, optional=True)
    _state().check_index(idx)


class _DeviceContext:
    """``torch.npu.device(d)``: select ``d`` inside the block; negative index or None is a no-op."""

    def __init__(self, device: Any):
        self.idx = -1 if device is None else _get_device_index(device, optional=True)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx < 0:
            return self
        self.prev_idx = int(_state().current_device())
        if self.prev_idx != self.idx:
            _state().set_device(self.idx)
        _lazy_init()
        return self

    def __exit__(self, *exc):
        if self.idx < 0:
            return False
        if self.prev_idx != self.idx:
            _state().set_device(max(self.prev_idx, 0))
        return False


class _DeviceOfContext(_DeviceContext):
    """``torch.npu.device_of(obj)``: the device of a tensor or storage (no-op for CPU objects)."""

    def __init__(self, obj: Any):
        is_npu = getattr(obj, "is_npu", False) or getattr(getattr(obj, "device", None), "type", None) == "npu"
        super().__init__(obj.get_device() if is_npu else -1)


def can_device_access_peer(device_id: Any, peer_device_id: Any) -> bool:
    """Peer access between two distinct simulated devices is always possible (shared host memory)."""
    device_id = _get_device_index(device_id, optional=True)
    peer_device_id = _get_device_index(peer_device_id, optional=True)
    _check_valid(device_id)
    _check_valid(peer_device_id, "Invalid peer device id")
    return device_id != peer_device_id


# the public names, with torch_npu's class names
device = _DeviceContext
device.__name__ = device.__qualname__ = "device"
device_of = _DeviceOfContext
device_of.__name__ = device_of.__qualname__ = "device_of"


def _tell_the_device_core() -> None:
    from ascend_compat.simulator import _state

    _state.register_visible_count(device_count)


_tell_the_device_core()
