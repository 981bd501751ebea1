"""A minimal ``torch.npu`` module: only the functions torch's own hooks call.

Used when the full torch_npu surface (``ascend_compat.simulator.npu_api``) is not available.
"""
from __future__ import annotations

import types

import torch


def build_minimal_module() -> types.ModuleType:
    """Return a module with is_available, device_count, current_device, set_device, _is_in_bad_fork,
    manual_seed(_all), get/set_rng_state, get_amp_supported_dtype, is_initialized, synchronize."""
    from ascend_compat.simulator import _rng, _state

    m = types.ModuleType("torch.npu", "Simulated Ascend NPU (minimal torch.npu module).")

    def _index(device):
        return _state.check_index(device if device is not None else None)

    m.is_available = lambda: _state.device_count() > 0
    m.device_count = _state.device_count
    m.current_device = _state.current_device
    m.set_device = _state.set_device
    m._is_in_bad_fork = lambda: False
    m.is_initialized = lambda: True
    m._lazy_init = lambda: None
    m.manual_seed = lambda seed: _rng.manual_seed(seed, _state.current_device())
    m.manual_seed_all = _rng.manual_seed_all
    m.seed = lambda: _rng.seed(_state.current_device())
    m.initial_seed = lambda: _rng.initial_seed(_state.current_device())
    m.get_rng_state = lambda device="npu": _rng.get_rng_state(_index(device))
    m.set_rng_state = lambda new_state, device="npu": _rng.set_rng_state(new_state, _index(device))
    m.get_amp_supported_dtype = lambda: [torch.float16, torch.bfloat16, torch.float32]
    m.synchronize = lambda device=None: None
    m.default_generators = _rng.default_generators()
    m.Generator = _rng.GeneratorFactory
    return m
