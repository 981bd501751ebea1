"""The simulated ``torch.npu`` module: torch_npu's public ``torch_npu.npu`` surface on the simulated device.

:func:`build_npu_module` assembles a fresh module from the concern modules of this package
(device, properties, runtime, streams, memory, random, amp, graphs, config, legacy_types). The simulator core calls it
during ``install()`` and registers the result as ``torch.npu``. Every public name of the emulated
torch_npu version (``ascend_compat.data.npu_api``) exists on it and is classified in
:mod:`.coverage` as implemented, emulated or refused; names this package does not define for that
version become refusing stubs, and names the emulated version does not have are left out.
"""
from __future__ import annotations

import sys
import types
import warnings
from typing import Any, Dict, FrozenSet, Optional

import torch

from . import amp as _amp
from . import config as _cfg
from . import coverage
from . import device as _device
from . import graphs as _graphs
from . import legacy_types as _legacy
from . import memory as _memory
from . import properties as _properties
from . import random as _random
from . import runtime as _runtime
from . import streams as _streams
from ._errors import SimulatorUnsupportedError, unsupported

__all__ = ["build_npu_module", "visible_device_count", "coverage", "SimulatorUnsupportedError"]

visible_device_count = _device.visible_device_count

# functions torch itself calls on the device module; never pruned by version emulation
_TORCH_HOOKS = frozenset({
    "is_available", "device_count", "current_device", "set_device", "synchronize", "is_initialized",
    "manual_seed", "manual_seed_all", "get_rng_state", "set_rng_state", "get_amp_supported_dtype",
    "default_generators", "Stream", "Event", "current_stream", "set_stream", "init",
})

_SUBMODULE_NAMES = ("amp", "aclnn", "autocast_utils", "backends", "deterministic", "graphs", "memory", "mstx",
                    "npu_config", "npugraph_ex", "random", "streams", "utils")


def _public_functions() -> Dict[str, Any]:
    """Every top-level public name this package implements, emulates or refuses."""
    names: Dict[str, Any] = {}
    for mod in (_device, _properties, _runtime, _streams, _memory, _random, _graphs, _cfg):
        for name, value in vars(mod).items():
            if not name.startswith("_") and name in (coverage.IMPLEMENTED | coverage.EMULATED | coverage.REFUSED):
                names[name] = value
    for name in ("is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype"):
        names[name] = getattr(_amp, name)
    names["get_amp_supported_dtype"] = _properties.get_amp_supported_dtype
    names.update(_legacy.build_legacy_types())
    names["npugraph_ex"] = _build_npugraph_ex()
    names["aclnn"] = _build_aclnn()
    names["amp"] = _amp.build_amp_module()
    names.pop("default_generators", None)  # served lazily by the module __getattr__
    return names


def _build_npugraph_ex() -> types.ModuleType:
    mod = types.ModuleType("torch.npu.npugraph_ex", "NPU graph compilation (refused in the simulator).")
    why = ("it compiles FX graphs into Ascend graph-engine models, which need CANN; use "
           "torch.compile(backend='eager') or 'aot_eager' on the simulated NPU")
    for name in ("compile_fx", "register_replacement"):
        def refuse(*args: Any, _name: str = name, **kwargs: Any):
            raise unsupported(f"npugraph_ex.{_name}", why)
        refuse.__name__ = name
        setattr(mod, name, refuse)
    return mod


class _AclnnModule(types.ModuleType):
    """``torch.npu.aclnn``: ``allow_hf32`` (conv HF32 switch, default True) and ``version()``."""

    @property
    def allow_hf32(self) -> bool:
        return _cfg.conv.allow_hf32

    @allow_hf32.setter
    def allow_hf32(self, value: bool) -> None:
        _cfg.conv.allow_hf32 = value

    @staticmethod
    def version():
        warnings.warn("torch.npu.aclnn.version isn't implemented!")
        return None


def _build_aclnn() -> types.ModuleType:
    return _AclnnModule("torch.npu.aclnn", "ACLNN operator switches of the simulated NPU.")


def _api_tables(version: Optional[str]):
    """(names of the emulated version, union over all versions) from the generated data; empty if absent."""
    from ascend_compat import data

    try:
        versions = data.npu_api_versions()
        union: FrozenSet[str] = frozenset().union(*(data.npu_api(v) for v in versions))
        return data.npu_api(version), union
    except (KeyError, ValueError, OSError):
        try:
            return data.npu_api(None), frozenset().union(*(data.npu_api(v) for v in data.npu_api_versions()))
        except Exception:
            return frozenset(), frozenset()


def _late_refusal(qualified: str, version: Optional[str]):
    def refuse(*args: Any, **kwargs: Any):
        raise unsupported(qualified, f"it exists in torch_npu {version or '(newest)'} but the simulator does "
                          "not model it")

    refuse.__name__ = qualified.rsplit(".", 1)[-1]
    refuse._ascend_compat_late_refusal = True
    return refuse


def build_npu_module(torch_npu_version: Optional[str] = None) -> types.ModuleType:
    """A new ``torch.npu`` module for the simulated device (also registers ``torch.npu.<sub>`` in sys.modules).

    ``torch_npu_version`` defaults to the simulator config's ``torch_npu_version`` (None = newest).
    """
    if torch_npu_version is None:
        try:
            torch_npu_version = getattr(_device.config(), "torch_npu_version", None)
        except Exception:
            torch_npu_version = None
    m = types.ModuleType("torch.npu", "Simulated Ascend NPU (ascend-compat): torch_npu's torch.npu surface.")
    public = _public_functions()
    for name, value in public.items():
        setattr(m, name, value)

    # private hooks torch and torch_npu-aware libraries call
    for name in ("_lazy_init", "_lazy_call", "_is_in_bad_fork", "_get_device_index", "_DeferredNpuCallError"):
        setattr(m, name, getattr(_device, name))
    m._get_device = lambda d: torch.device(d) if isinstance(d, str) else (torch.device("npu", d) if isinstance(d, int) else d)
    m._simulated = True
    from ascend_compat.simulator import _rng

    m.Generator = _rng.GeneratorFactory

    def __getattr__(name: str):
        if name == "default_generators":
            return _random.default_generators()
        if name == "_initialized":  # torch_npu's module flag; torch.utils.checkpoint reads it to save RNG states
            return _device._initialized
        raise AttributeError(f"module 'torch.npu' has no attribute '{name}'")

    m.__getattr__ = __getattr__

    # submodules, filled from the generated API table of every version
    wanted, union = _api_tables(torch_npu_version)
    subs: Dict[str, types.ModuleType] = {"amp": m.amp, "aclnn": m.aclnn, "npugraph_ex": m.npugraph_ex}
    for sub in _SUBMODULE_NAMES:
        if sub in subs or sub == "mstx":
            continue
        subs[sub] = types.ModuleType(f"torch.npu.{sub}")
    extras = {"is_force_overflow_check": lambda: False, "get_cann_version": _properties.get_cann_version,
              "is_support_inf_nan": _properties.is_support_inf_nan, "npu_check_overflow": _cfg.npu_check_overflow}
    for qualified in sorted(union if union else ()):
        if "." not in qualified:
            continue
        sub, attr = qualified.split(".", 1)
        holder = subs.get(sub)
        if holder is None or "." in attr or hasattr(holder, attr):
            continue
        if attr in public:
            setattr(holder, attr, public[attr])
        elif attr in extras:
            setattr(holder, attr, extras[attr])
        elif attr == "torch_npu":  # a module-level import some versions' submodules expose
            import ascend_compat.simulator.torch_npu as stand_in

            setattr(holder, attr, stand_in)
        elif attr in sys.modules:  # likewise (gc, typing, torch)
            setattr(holder, attr, sys.modules[attr])
    for name, value in extras.items():
        if not hasattr(m, name) and name != "is_force_overflow_check":
            setattr(m, name, value)
    subs["memory"].__dict__.update(
        _record_memory_history=_memory._record_memory_history, _snapshot=_memory._snapshot,
        _dump_snapshot=_memory._dump_snapshot)
    subs["utils"]._get_device_index = _device._get_device_index
    for sub, mod in subs.items():
        setattr(m, sub, mod)
        sys.modules[f"torch.npu.{sub}"] = mod

    # version emulation: refuse what this version has but we lack; drop what it does not have
    if wanted:
        for qualified in sorted(wanted):
            owner, _, attr = qualified.rpartition(".")
            holder = m if not owner else subs.get(owner, getattr(m, owner, None))
            if holder is None or hasattr(holder, attr):
                continue
            setattr(holder, attr, _late_refusal(qualified, torch_npu_version))
        top_level_union = {n for n in union if "." not in n}
        for name in top_level_union - {n for n in wanted if "." not in n} - _TORCH_HOOKS:
            if name in m.__dict__:
                delattr(m, name)
    m.__all__ = sorted(n for n in (wanted or public) if "." not in n and n in m.__dict__)
    # torch.accelerator's allocator/stream functions and torch.Event cannot reach a Python backend:
    # route them to this module (process-wide, once; harmless before registration)
    from .accelerator import bridge_accelerator

    bridge_accelerator(m)
    return m
