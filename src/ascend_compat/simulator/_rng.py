"""Random number generation of the simulated NPU, modelled on torch_npu's ``NPUGeneratorImpl``.

torch_npu's generator is CUDA's: a Philox state of a 64-bit ``seed`` and a 64-bit ``offset`` (a
multiple of 4). ``get_state()`` is those 16 bytes (seed, then offset, little-endian), ``set_state``
takes 16 (or 8: seed only, offset 0), ``manual_seed`` resets the offset to 0, and each random kernel
takes ``(seed, offset)`` and advances the offset by what it consumes (op-plugin's
``calc_final_counter_offset``/``philox_engine_inputs``, rounded up to a multiple of 4). A kernel's
numbers are a function of ``(seed, offset)`` alone, which is what Philox consumers rely on: DTensor's
``OffsetBasedRNGTracker`` reads and writes the offset in bytes 8-16 so that ranks holding the same
shard draw the same numbers and different shards draw different ones; ``torch.utils.checkpoint`` and
``fork_rng`` restore a state and get the same numbers again.

Here each random kernel runs on the host with a fresh CPU generator seeded from ``(seed, offset)``
(at offset 0 with ``seed`` itself, so the first random op after ``manual_seed(s)`` draws what the CPU
draws after ``torch.manual_seed(s)``; later ops differ from the CPU's stream, as the NPU's do). The
values are not the NPU's Philox numbers: only the state, its arithmetic and the determinism are
simulated.

Generators: each device has a default :class:`NPUGenerator`, seeded non-deterministically when it is
made (torch_npu's ``getDefaultNPUGenerator`` calls ``seed()``); ``torch.Generator("npu")`` makes one
seeded with c10's ``default_rng_seed_val`` (``createNPUGenerator``). An ``NPUGenerator`` is a
``torch._C.Generator`` (so ``isinstance`` and the dispatcher accept it) whose own C++ CPU state is
never drawn from: torch passes generators into kernels as plain ``torch._C.Generator`` objects, and
the simulator finds the Philox state again through ``_cdata`` (the C++ generator's address). A CPU
generator given to an npu op is refused as torch_npu refuses it (``at::check_generator``).
``graphsafe_get_state``/``graphsafe_set_state`` share one state between generators, as torch_npu's do.

``torch.Generator`` itself is replaced by :class:`GeneratorFactory` (``torch.Generator("npu")`` needs
the backend's C++ hooks), whose metaclass keeps ``isinstance(g, torch.Generator)`` true for every
generator.

Interface for the stand-in's ``torch_npu.npu`` and the kernels: ``generator``, ``default_generators``,
``manual_seed``, ``manual_seed_all``, ``seed``, ``initial_seed``, ``get_rng_state``, ``set_rng_state``,
``op_generator``, ``run_with_device_state``, ``philox_engine_inputs``.
"""
from __future__ import annotations

import struct
import threading
import weakref
from typing import Optional, Tuple

import torch

from ascend_compat.simulator import _host

_OriginalGenerator = torch._C.Generator
_generators: Tuple["NPUGenerator", ...] = ()
_by_cdata: "weakref.WeakValueDictionary[int, NPUGenerator]" = weakref.WeakValueDictionary()
_swap_lock = threading.Lock()

DEFAULT_SEED = 67280421310721  # c10::default_rng_seed_val (createNPUGenerator)
_U64 = 1 << 64
_STATE_SIZE = 16  # seed (uint64) + offset (int64)

# op-plugin's RandomUtil.h: the launch geometry its offsets are computed for
_BLOCK_SIZE = 256
_MAX_GRID = 78 * (2048 // 256)  # MAX_PROCESSOR_COUNT * blocks per SM
_RAND_OFFSET_PER_CALL = 4
_LEGACY_INCREMENT = 10  # philox_engine_inputs(10): bernoulli, randperm, dropout masks, fused attention
_LEGACY_OPS = frozenset({"bernoulli", "bernoulli_", "randperm", "_npu_dropout_gen_mask", "npu_dropout_gen_mask"})


class _PhiloxState:
    """``NPUGeneratorState``: seed and offset (shared by generators through ``graphsafe_*``)."""

    __slots__ = ("seed", "offset", "lock")

    def __init__(self, seed: int, offset: int = 0):
        self.seed, self.offset, self.lock = seed, offset, threading.Lock()

    def take(self, increment: int) -> Tuple[int, int]:
        """``philox_engine_inputs``: the current (seed, offset), then offset += increment (multiple of 4)."""
        increment = (increment + 3) // 4 * 4
        with self.lock:
            pair = (self.seed, self.offset)
            self.offset += increment
        return pair


def _check_seed(seed) -> int:
    seed = int(seed)
    if not -(1 << 63) <= seed < _U64:
        raise RuntimeError(f"Overflow when unpacking long long: seed {seed} is out of the range [-2**63, 2**64)")
    return seed % _U64


def _check_offset(offset) -> int:
    offset = int(offset)
    if offset % 4:
        from ascend_compat.simulator._error_code import cpp_error

        raise RuntimeError("offset must be a multiple of 4" + cpp_error("PTA", "VALUE"))
    return offset % _U64


def _nondeterministic_seed() -> int:
    return _OriginalGenerator().seed()  # c10::detail::getNonDeterministicRandom, as NPUGeneratorImpl::seed


class NPUGenerator(torch._C.Generator):
    """The generator of simulated device ``npu:index`` (see the module docstring)."""

    def __new__(cls, device="npu"):
        from ascend_compat.simulator import _state as _device_state

        return _new(_device_state.check_index(device), _PhiloxState(DEFAULT_SEED))

    def __init__(self, device="npu"):
        pass

    @property
    def device(self) -> torch.device:
        return torch.device("npu", self._npu_index)

    def __repr__(self) -> str:
        return f"<torch.Generator object (simulated npu:{self._npu_index})>"

    def manual_seed(self, seed) -> "NPUGenerator":
        seed = _check_seed(seed)
        with self._philox.lock:
            self._philox.seed, self._philox.offset = seed, 0
        return self

    def seed(self) -> int:
        value = _nondeterministic_seed()
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        return self._philox.seed

    def get_offset(self) -> int:
        return self._philox.offset

    def set_offset(self, offset) -> "NPUGenerator":
        self._philox.offset = _check_offset(offset)
        return self

    def get_state(self) -> torch.Tensor:
        """16 bytes: the seed (uint64) and the offset (int64), little-endian, as a CPU uint8 tensor."""
        raw = struct.pack("<Qq", self._philox.seed, _signed(self._philox.offset))
        return _host.tensor(list(raw), dtype=torch.uint8)

    def set_state(self, new_state: torch.Tensor) -> "NPUGenerator":
        """``NPUGeneratorImpl::set_state``: 16 bytes, or 8 (the seed alone; offset 0)."""
        if (not isinstance(new_state, torch.Tensor) or new_state.dtype != torch.uint8
                or new_state.device.type != "cpu" or new_state.layout != torch.strided):
            raise TypeError("RNG state must be a torch.ByteTensor")
        n = new_state.numel()
        if n not in (_STATE_SIZE - 8, _STATE_SIZE):
            from ascend_compat.simulator._error_code import cpp_error

            raise RuntimeError("RNG state is wrong size" + cpp_error("PTA", "PARAM"))
        raw = bytes(new_state.contiguous().tolist())
        seed = struct.unpack("<Q", raw[:8])[0]
        offset = struct.unpack("<q", raw[8:])[0] if n == _STATE_SIZE else 0
        offset = _check_offset(offset)
        with self._philox.lock:
            self._philox.seed, self._philox.offset = seed, offset
        return self

    def graphsafe_get_state(self) -> "NPUGenerator":
        """A generator sharing this one's state (``NPUGeneratorImpl::graphsafe_get_state``)."""
        return _new(self._npu_index, self._philox)

    def graphsafe_set_state(self, gen) -> "NPUGenerator":
        """Make this generator use ``gen``'s state from now on (shared, not copied)."""
        other = _lookup(gen)
        if other is None:
            raise RuntimeError("Expected a NPU Generator")
        self._philox = other._philox
        return self

    def clone_state(self) -> "NPUGenerator":
        """A generator with a copy of this one's state."""
        return _new(self._npu_index, _PhiloxState(self._philox.seed, self._philox.offset))

    def __reduce__(self):
        return (_rebuild, (self._npu_index, self._philox.seed, self._philox.offset))


def _new(index: int, state: _PhiloxState) -> NPUGenerator:
    """An :class:`NPUGenerator` of device ``index`` on ``state`` (no device check: the default
    generators of devices a visibility setting hides exist too)."""
    self = _OriginalGenerator.__new__(NPUGenerator, "cpu")
    self._npu_index = index
    self._philox = state
    _by_cdata[self._cdata] = self
    return self


def _rebuild(index: int, seed: int, offset: int) -> NPUGenerator:
    return _new(index, _PhiloxState(seed, offset))


def _signed(value: int) -> int:
    return value - _U64 if value >= 1 << 63 else value


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
    """Create the per-device default generators, each seeded non-deterministically (torch_npu's
    ``getDefaultNPUGenerator``); ``torch.manual_seed`` seeds them all."""
    global _generators
    _generators = tuple(_new(i, _PhiloxState(_nondeterministic_seed())) for i in range(num_devices))


def generator(index: int) -> NPUGenerator:
    """The default generator of device ``index``."""
    return _generators[index]


def default_generators() -> tuple:
    """All devices' default generators, indexed by device (``torch.npu.default_generators``)."""
    return _generators


def manual_seed(seed: int, index: int) -> None:
    """Seed device ``index``'s generator (offset 0)."""
    _generators[index].manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every device's generator (torch.manual_seed calls this through the device module)."""
    for g in _generators:
        g.manual_seed(seed)


def seed(index: int) -> int:
    """Seed device ``index``'s generator non-deterministically; return the seed."""
    return _generators[index].seed()


def initial_seed(index: int) -> int:
    """The seed device ``index``'s generator was last seeded with."""
    return _generators[index].initial_seed()


def get_rng_state(index: int) -> torch.Tensor:
    """Device ``index``'s generator state: 16 bytes (seed, offset) as a CPU ByteTensor."""
    return _generators[index].get_state()


def set_rng_state(state: torch.Tensor, index: int) -> None:
    """Restore device ``index``'s generator state from 16 bytes (or 8: the seed, offset 0)."""
    if not isinstance(state, torch.Tensor) or state.dtype != torch.uint8:
        raise TypeError(f"RNG state must be a torch.ByteTensor, got {type(state).__name__}")
    _generators[index].set_state(state.cpu() if state.device.type != "cpu" else state)


def _lookup(gen) -> Optional[NPUGenerator]:
    """The :class:`NPUGenerator` behind ``gen`` (as passed by the dispatcher, or itself), or None."""
    if isinstance(gen, NPUGenerator):
        return gen
    return _by_cdata.get(gen._cdata) if isinstance(gen, _OriginalGenerator) else None


def _resolve(gen, index: int) -> NPUGenerator:
    if gen is None:
        return _generators[index]
    found = _lookup(gen)
    if found is None:
        raise RuntimeError(f"Expected a 'npu' device type for generator but found '{gen.device.type}'")
    return found


def increment(op_name: str, tensor: Optional[torch.Tensor]) -> int:
    """What a torch_npu random kernel adds to the offset for a call writing ``tensor``: 10 for the
    ops op-plugin gives ``philox_engine_inputs(10)``, else ``calc_counter_offset(numel, unroll)``
    (unroll 2 for int64 results, 4 otherwise; 0 for an empty tensor)."""
    base = op_name.split("::")[-1].split(".")[0]
    if base in _LEGACY_OPS or tensor is None:
        return _LEGACY_INCREMENT
    numel = tensor.numel()
    if numel == 0:
        return 0
    unroll = 2 if tensor.dtype == torch.int64 else 4
    grid = min(_MAX_GRID, (numel + _BLOCK_SIZE - 1) // _BLOCK_SIZE)
    return ((numel - 1) // (_BLOCK_SIZE * grid * unroll) + 1) * _RAND_OFFSET_PER_CALL


def _host_seed(seed: int, offset: int) -> int:
    """The seed of the host generator one kernel at ``(seed, offset)`` draws from: ``seed`` at offset
    0, else a 64-bit mix of both (splitmix64) folded so all its bits reach the 32-bit Mersenne seed."""
    if offset == 0:
        return seed
    z = (seed ^ ((offset + 0x9E3779B97F4A7C15) * 0xBF58476D1CE4E5B9)) % _U64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % _U64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % _U64
    z ^= z >> 31
    return (z ^ (z >> 32)) & 0xFFFFFFFF


def philox_engine_inputs(index: int, increment_by: int = _LEGACY_INCREMENT) -> Tuple[int, int]:
    """``(seed, offset)`` of device ``index``'s default generator, then its offset advanced (fused
    kernels that take a seed and offset, e.g. npu_fusion_attention's dropout)."""
    return _generators[index]._philox.take(increment_by)


def op_generator(gen, index: int, op_name: str, tensor: Optional[torch.Tensor]) -> torch._C.Generator:
    """The host generator one random kernel on ``npu:index`` draws from: ``gen`` (None = the device's
    default) gives its ``(seed, offset)`` and advances its offset by :func:`increment`."""
    seed_, offset = _resolve(gen, index)._philox.take(increment(op_name, tensor))
    host = _OriginalGenerator()
    host.manual_seed(_host_seed(seed_, offset))
    return host


def run_with_device_state(fn, index: int, op_name: str = "", tensor: Optional[torch.Tensor] = None):
    """Run ``fn()`` (a seeded op without a generator argument) with the global CPU generator seeded
    for device ``index``'s next ``(seed, offset)``, then restore the CPU generator."""
    seed_, offset = _generators[index]._philox.take(increment(op_name, tensor))
    default = torch.default_generator
    with _swap_lock:
        saved = default.get_state()
        default.manual_seed(_host_seed(seed_, offset))
        try:
            return fn()
        finally:
            default.set_state(saved)
