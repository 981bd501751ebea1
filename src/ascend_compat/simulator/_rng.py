"""Random number generation of the simulated NPU: one host generator per device.

Each device owns an :class:`NPUGenerator`: a host (CPU) ``torch._C.Generator`` whose ``device``
reports ``npu:i``. Seeded ops (tag ``nondeterministic_seeded``) on npu tensors use the device's
generator when called with ``generator=None``; seeded ops without a generator argument (e.g.
``native_dropout``) run with the global CPU generator state swapped for the device's.

``torch.Generator("npu")``: torch asks the backend's C++ hooks for a new generator, which Python
hooks cannot provide. The simulator therefore replaces ``torch.Generator`` with
:class:`GeneratorFactory`, a subclass of ``torch._C.Generator`` whose metaclass makes
``isinstance(g, torch.Generator)`` true for every generator (as before) and whose constructor
returns an :class:`NPUGenerator` for npu devices and a plain generator otherwise.

Values equal CPU's for the same seed (real hardware's generator gives different numbers); only
determinism and per-device independence are simulated.

Interface for the stand-in's ``torch_npu.npu``: ``generator``, ``default_generators``, ``manual_seed``,
``manual_seed_all``, ``seed``, ``initial_seed``, ``get_rng_state``, ``set_rng_state``.
"""
from __future__ import annotations

import threading
from typing import Tuple

import torch

_OriginalGenerator = torch._C.Generator
_generators: Tuple["NPUGenerator", ...] = ()
_swap_lock = threading.Lock()


class NPUGenerator(torch._C.Generator):
    """A host generator standing for the generator of simulated device ``npu:index``."""

    def __new__(cls, device="npu"):
        from ascend_compat.simulator import _state

        index = _state.check_index(device if not isinstance(device, int) else device)
        self = super().__new__(cls, "cpu")
        self._npu_index = index
        return self

    def __init__(self, device="npu"):
        pass

    @property
    def device(self) -> torch.device:
        return torch.device("npu", self._npu_index)

    def __repr__(self) -> str:
        return f"<torch.Generator object (simulated npu:{self._npu_index})>"


class _GeneratorMeta(type(torch._C.Generator)):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, _OriginalGenerator)

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, _OriginalGenerator)


class GeneratorFactory(_OriginalGenerator, metaclass=_GeneratorMeta):
    """Replacement for ``torch.Generator`` that also accepts npu devices (see module doc)."""

    def __new__(cls, device="cpu"):
        dev = torch.device(device) if not isinstance(device, torch.device) else device
        if dev.type == "npu":
            return NPUGenerator(dev)
        return _OriginalGenerator(device)


def init(num_devices: int) -> None:
    """Create the per-device default generators, seeded like CUDA's (default seed 67280421310721)."""
    global _generators
    _generators = tuple(_make(i) for i in range(num_devices))


def _make(index: int) -> NPUGenerator:
    g = _OriginalGenerator.__new__(NPUGenerator, "cpu")
    g._npu_index = index
    g.manual_seed(67280421310721)
    return g


def generator(index: int) -> torch.Generator:
    """The default generator of device ``index``."""
    return _generators[index]


def default_generators() -> tuple:
    """All devices' default generators, indexed by device (``torch.npu.default_generators``)."""
    return _generators


def manual_seed(seed: int, index: int) -> None:
    """Seed device ``index``'s generator."""
    _generators[index].manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seed every device's generator (torch.manual_seed calls this through the device module)."""
    for g in _generators:
        g.manual_seed(int(seed))


def seed(index: int) -> int:
    """Seed device ``index``'s generator non-deterministically; return the seed."""
    return _generators[index].seed()


def initial_seed(index: int) -> int:
    """The seed device ``index``'s generator was last seeded with."""
    return _generators[index].initial_seed()


def get_rng_state(index: int) -> torch.Tensor:
    """Device ``index``'s generator state as a CPU ByteTensor."""
    return _generators[index].get_state()


def set_rng_state(state: torch.Tensor, index: int) -> None:
    """Restore device ``index``'s generator state from a ByteTensor from :func:`get_rng_state`."""
    if not isinstance(state, torch.Tensor) or state.dtype != torch.uint8:
        raise TypeError(f"RNG state must be a torch.ByteTensor, got {type(state).__name__}")
    _generators[index].set_state(state.cpu() if state.device.type != "cpu" else state)


def check_generator(gen, index: int):
    """The host generator an op on ``npu:index`` uses: the device default for None, else ``gen``.

    Limit: torch re-wraps generators passed through the dispatcher as plain ``torch._C.Generator``
    objects (the Python subclass is lost), so a CPU generator passed to an npu op cannot be told
    apart from an npu one and is accepted (CUDA would reject it).
    """
    if gen is None:
        return _generators[index]
    return gen


def run_with_device_state(fn, index: int):
    """Run ``fn()`` with the global CPU generator state temporarily replaced by device ``index``'s."""
    gen = _generators[index]
    default = torch.default_generator
    with _swap_lock:
        saved = default.get_state()
        default.set_state(gen.get_state())
        try:
            return fn()
        finally:
            gen.set_state(default.get_state())
            default.set_state(saved)
