"""A simulated Ascend NPU: a real PyTorch PrivateUse1 backend named ``npu`` computing on the host.

``install()`` registers it (once per process, irreversibly). Afterwards ``torch.device("npu:0")``
tensors are plain ``torch.Tensor`` objects with real host storage, ``torch.npu`` answers like
torch_npu, ``import torch_npu`` works, autocast/GradScaler work on ``"npu"``, and ops that the
emulated torch_npu version has no NPU kernel for emit torch_npu's CPU-fallback warning.

Public API: :func:`install`, :func:`is_installed`, :func:`install_from_env`, :func:`config`,
:func:`policy`.
"""
from __future__ import annotations

import os

import contextlib
import threading
from typing import Optional

from ascend_compat.simulator._config import SimConfig, SimConfigError  # noqa: F401  (re-exported)

__all__ = ["install", "is_installed", "install_from_env", "config", "policy", "SimConfig",
           "SimConfigError", "SimulatorUnavailable"]

_lock = threading.Lock()
_installed: Optional[SimConfig] = None
_libraries: list = []  # torch.library.Library objects must stay alive for their registrations


def __getattr__(name):
    if name == "SimulatorUnavailable":
        from ascend_compat.simulator._selftest import SimulatorUnavailable

        return SimulatorUnavailable
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_installed() -> bool:
    """True once :func:`install` has succeeded in this process."""
    return _installed is not None


def config() -> Optional[SimConfig]:
    """The active (frozen) configuration, or None before install."""
    return _installed


def install(devices=1, float64="torch_npu", memory_capacity=None, soc="Ascend910B3", torch_npu_version=None,
            autograd_threads="caller") -> SimConfig:
    """Install the simulated NPU in this process and return its configuration.

    Args:
        devices: number of simulated NPUs (1..64).
        float64: "torch_npu" (as real torch_npu: float64/complex128 npu tensors exist, ``x.double()``
            of an npu tensor returns float32 with torch_npu's one-time message), "warn" (the same,
            plus a warning at every float64 npu allocation), "strict" (every float64 npu
            allocation or downcast raises TypeError), "allow" (float64 everywhere, no downcast).
        memory_capacity: per-device capacity in bytes (or "16G"); exceeding it raises
            ``torch.OutOfMemoryError`` worded like torch_npu. None = unlimited.
        soc: the SoC name reported by torch.npu (e.g. "Ascend910B3").
        torch_npu_version: torch_npu version whose op coverage is emulated (None = newest known).
        autograd_threads: "caller" (run npu backward on the calling thread, as CPU backward runs;
            saves two thread hand-offs per backward) or "device" (torch's per-device worker
            threads, as torch_npu has them). See ``simulator._autograd``.

    Idempotent for identical arguments; a second call with different arguments raises
    RuntimeError (the backend cannot be reconfigured in a running process). Raises
    :class:`SimConfigError` for invalid arguments and ``SimulatorUnavailable`` when the simulator
    refuses (real torch_npu present, PrivateUse1 taken, torch too old, a self-check failed).
    """
    global _installed
    from ascend_compat.simulator import _config

    cfg = _config.make_config(devices, float64, memory_capacity, soc, torch_npu_version, autograd_threads)
    with _lock:
        if _installed is not None:
            if cfg == _installed:
                return _installed
            raise RuntimeError(
                f"the simulated NPU is already installed with {_installed}; it cannot be reinstalled with "
                f"{cfg} in the same process. Start a new process (or use ASCEND_COMPAT_SIM_* variables).")
        _install(cfg)
        _installed = cfg
    return cfg


def _build_module(cfg):
    from ascend_compat.simulator.torch_npu import npu as npu_api

    return npu_api.build_npu_module()


def _install(cfg: SimConfig) -> None:
    import torch

    from ascend_compat.simulator import (_amp, _autograd, _direct, _dispatch, _fallback, _float64, _guard,
                                         _memory, _patches, _rng, _selftest, _state)

    _selftest.refuse_conflicts()
    _selftest.check_torch()

    _state.config = cfg
    _memory.init(cfg.devices, None, cfg.torch_npu_version)  # the capacity after the self-checks
    _float64.init(cfg.float64)
    guard = _guard.choose(cfg.devices)
    _rng.init(cfg.devices)
    _fallback.init(cfg.op_table_version)
    module = _build_module(cfg)

    # The steps of torch.utils.backend_registration._setup_privateuseone_for_python_backend, in
    # its order, with storage methods generated as torch_npu does and the guard left to _guard.
    torch.utils.rename_privateuse1_backend("npu")
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True,
        unsupported_dtype=[torch.quint8, torch.quint4x2, torch.quint2x4, torch.qint32, torch.qint8])
    torch._register_device_module("npu", module)
    _guard.register(guard)
    native = _guard.cxx_hooks()
    if native is not None:
        _memory.use_native(native)
        _dispatch.use_native(native)
    _selftest.probe_dlpack()  # needs the renamed backend and its device module

    fallback_lib = torch.library.Library("_", "IMPL")
    aten_lib = torch.library.Library("aten", "IMPL")
    _libraries.extend((fallback_lib, aten_lib))
    fallback_lib.fallback(_dispatch.boxed_fallback, "PrivateUse1")
    _direct.register(aten_lib, _fallback.native_set())
    _float64.register(aten_lib)
    _amp.register(fallback_lib, aten_lib)
    _patches.apply()
    _autograd.apply(cfg.autograd_threads, python_guard=not _guard.cxx_guard_active())
    _selftest.probe_installed()
    _memory.restart(cfg.memory_capacity)
    _install_torch_npu_stand_in()
    from ascend_compat.simulator import _distributed, _dynamo, _ipc
    from ascend_compat.simulator.torch_npu.npu import device as device_api

    _distributed.register_hccl()
    _dynamo.register()
    _ipc.register()
    _apply_numerics()
    device_api._forget_install_probes()  # the first real use initialises (decides fork safety)


def _apply_numerics() -> None:
    """torch_npu's arithmetic (HF32 switches honoured) unless ``ASCEND_COMPAT_SIM_NUMERICS=exact``;
    an invalid value warns and keeps the default."""
    from ascend_compat import _config as _env
    from ascend_compat.simulator import numerics

    try:
        numerics.install_from_env()
    except ValueError as exc:
        _env.warn_invalid("ASCEND_COMPAT_SIM_NUMERICS", os.environ.get("ASCEND_COMPAT_SIM_NUMERICS", ""), str(exc),
                          "npu (HF32 switches honoured)")
        numerics.register()


def _install_torch_npu_stand_in() -> None:
    """Register ``torch.ops.npu`` (torch_npu's custom ops) and torch_npu's own aten SDPA kernels, and make
    ``import torch_npu`` give the stand-in."""
    from ascend_compat.simulator import _fallback, _state
    from ascend_compat.simulator._stand_in import install_stand_in
    from ascend_compat.simulator.torch_npu import _op_registry
    from ascend_compat.simulator.torch_npu.fused import sdpa

    version = _state.config.torch_npu_version if _state.config else None
    _libraries.append(_op_registry.register(version))
    sdpa_lib = sdpa.register(_fallback.native_set())
    if sdpa_lib is not None:
        _libraries.append(sdpa_lib)
    install_stand_in(version)


def install_from_env() -> SimConfig:
    """Install with arguments from ``ASCEND_COMPAT_SIM_*`` (see ``ascend_compat._config``).

    Under torchrun the default device count is ``max(1, LOCAL_WORLD_SIZE)``. An invalid value is
    ignored with a warning (its default applies): the environment never stops the program.
    """
    from ascend_compat import _config as _env
    from ascend_compat.simulator import faults
    from ascend_compat.simulator._config import env_arguments

    cfg = install(**env_arguments(strict=False))
    if not faults.active():
        try:
            faults.install_from_env()
        except faults.FaultError as exc:
            _env.warn_invalid("ASCEND_COMPAT_SIM_FAULTS", os.environ.get("ASCEND_COMPAT_SIM_FAULTS", ""), str(exc),
                              "no fault injected")
    return cfg


@contextlib.contextmanager
def policy(float64: str):
    """Temporarily switch the float64 mode (process-wide, not thread-local; for tests)."""
    from ascend_compat.simulator import _config, _float64

    _config.check_float64(float64)
    if _installed is None:
        raise RuntimeError("policy() needs the simulated NPU installed (call install() first)")
    with _float64.override(float64):
        yield
