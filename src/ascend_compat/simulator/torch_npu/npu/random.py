"""RNG functions of the simulated ``torch.npu``: one generator per device, owned by the simulator core.

States are torch_npu's 16-byte Philox (seed, offset) states (``simulator._rng``): seeding, offsets and
state round-trips are exact and deterministic; the numbers themselves are not the NPU's.
"""
from __future__ import annotations

from typing import Any, Iterable, List

import torch

from . import device as _dev


def _rng():
    from ascend_compat.simulator import _rng

    return _rng


def _idx(device: Any) -> int:
    return _dev._get_device_index(device, optional=True)


def get_rng_state(device: Any = "npu") -> torch.Tensor:
    """The RNG state (uint8 tensor) of ``device`` (default: current device)."""
    _dev._lazy_init()
    return _rng().get_rng_state(_idx(device))


def get_rng_state_all() -> List[torch.Tensor]:
    return [get_rng_state(i) for i in range(_dev.device_count())]


def set_rng_state(new_state: torch.Tensor, device: Any = "npu") -> None:
    """Restore the RNG state of ``device``."""
    idx = _idx(device)
    state = new_state.clone(memory_format=torch.contiguous_format)
    _dev._lazy_call(lambda: _rng().set_rng_state(state, idx))


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def manual_seed(seed: int) -> None:
    """Seed the current device's generator."""
    seed = int(seed)
    _dev._lazy_call(lambda: _rng().manual_seed(seed, _dev._state().current_device()))


def manual_seed_all(seed: int) -> None:
    """Seed every device's generator (``torch.manual_seed`` calls this)."""
    seed = int(seed)
    _dev._lazy_call(lambda: _rng().manual_seed_all(seed))


def seed() -> None:
    """Seed the current device's generator from a non-deterministic source."""
    _dev._lazy_call(lambda: _rng().seed(_dev._state().current_device()))


def seed_all() -> None:
    """Seed device 0 randomly and give every other device the same seed, as torch_npu does."""

    def cb():
        rng = _rng()
        n = _dev.device_count()
        if n == 0:
            return
        rng.seed(0)
        value = rng.initial_seed(0)
        for i in range(1, n):
            rng.manual_seed(value, i)

    _dev._lazy_call(cb)


def initial_seed() -> int:
    _dev._lazy_init()
    return int(_rng().initial_seed(_dev._state().current_device()))


def default_generators() -> tuple:
    return tuple(_rng().default_generators())
