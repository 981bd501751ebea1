"""The simulator's configuration: a frozen :class:`SimConfig`, its validation and env parsing.

Every value a user can pass to :func:`ascend_compat.simulator.install` (or set through the
``ASCEND_COMPAT_SIM_*`` variables) is checked here, with an error that says what was wrong and
what is accepted.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Optional

from ascend_compat import _config as _env

FLOAT64_MODES = ("torch_npu", "warn", "strict", "allow")  # see simulator._float64
AUTOGRAD_THREAD_MODES = ("caller", "device")  # see simulator._autograd

#: SoC names torch_npu knows (torch_npu.npu.get_soc_version names), see the reference notes.
KNOWN_SOCS = (
    "Ascend910A", "Ascend910ProA", "Ascend910PremiumA", "Ascend910ProB", "Ascend910B",
    "Ascend310P1", "Ascend310P2", "Ascend310P3", "Ascend310P4", "Ascend310P5", "Ascend310P7",
    "Ascend910B1", "Ascend910B2", "Ascend910B2C", "Ascend910B3", "Ascend910B4", "Ascend910B4_1",
    "Ascend310B1", "Ascend310B2", "Ascend310B3", "Ascend310B4",
    "Ascend910_9391", "Ascend910_9392", "Ascend910_9381", "Ascend910_9382", "Ascend910_9372",
    "Ascend910_9362", "Ascend910_9363", "Ascend950",
)

MAX_DEVICES = 64


class SimConfigError(ValueError):
    """A simulator setting is invalid; the message names the setting and the accepted values."""


@dataclasses.dataclass(frozen=True)
class SimConfig:
    """The active simulator configuration (read-only once installed).

    ``torch_npu_version`` is the emulated torch_npu version as given (None = newest known);
    ``op_table_version`` is the key of the native-op table it resolved to (None when no table
    is available, in which case CPU fallbacks are not simulated).
    """

    devices: int = 1
    float64: str = "torch_npu"
    memory_capacity: Optional[int] = None
    soc: str = "Ascend910B3"
    torch_npu_version: Optional[str] = None
    op_table_version: Optional[str] = None
    autograd_threads: str = "caller"


def _check_devices(devices: object) -> int:
    if isinstance(devices, bool) or not isinstance(devices, int):
        raise SimConfigError(
            f"devices must be an int between 1 and {MAX_DEVICES}, got {devices!r} "
            "(install(devices=N) or ASCEND_COMPAT_SIM_DEVICES=N)"
        )
    if not 1 <= devices <= MAX_DEVICES:
        raise SimConfigError(
            f"devices must be between 1 and {MAX_DEVICES}, got {devices} "
            "(install(devices=N) or ASCEND_COMPAT_SIM_DEVICES=N)"
        )
    return devices


def check_float64(mode: object) -> str:
    """Return ``mode`` if it is a valid float64 mode, else raise :class:`SimConfigError`."""
    if mode == "error":
        raise SimConfigError(
            "float64 mode 'error' was removed: it refused float64 npu tensors that real NPUs allocate. "
            "Use 'strict' to have every float64 use on the device reported, or the default 'torch_npu' "
            "(install(float64=...) or ASCEND_COMPAT_SIM_FLOAT64)")
    if mode not in FLOAT64_MODES:
        raise SimConfigError(
            f"float64 policy must be one of {', '.join(FLOAT64_MODES)}, got {mode!r} "
            "(install(float64=...) or ASCEND_COMPAT_SIM_FLOAT64)"
        )
    return mode  # type: ignore[return-value]


def _check_autograd_threads(mode: object) -> str:
    if mode not in AUTOGRAD_THREAD_MODES:
        raise SimConfigError(
            f"autograd_threads must be one of {', '.join(AUTOGRAD_THREAD_MODES)}, got {mode!r} "
            "(install(autograd_threads=...) or ASCEND_COMPAT_SIM_AUTOGRAD_THREADS)"
        )
    return mode  # type: ignore[return-value]


def _check_capacity(capacity: object) -> Optional[int]:
    if capacity is None:
        return None
    if isinstance(capacity, str):
        try:
            capacity = _env.parse_bytes(capacity)
        except ValueError as exc:
            raise SimConfigError(
                f"memory_capacity {capacity!r} is not a byte count (examples: 1073741824, 512M, 2G)"
            ) from exc
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity <= 0:
        raise SimConfigError(
            f"memory_capacity must be a positive number of bytes or None (unlimited), got {capacity!r}"
        )
    return capacity


def _check_soc(soc: object) -> str:
    if soc not in KNOWN_SOCS:
        raise SimConfigError(
            f"unknown SoC {soc!r}; torch_npu knows: {', '.join(KNOWN_SOCS)}"
        )
    return soc  # type: ignore[return-value]


def _resolve_version(version: object) -> Optional[str]:
    """Map a torch_npu version to its native-op table key (None when no tables exist)."""
    if version is not None and not isinstance(version, str):
        raise SimConfigError(f"torch_npu_version must be a string like '2.5.1' or None, got {version!r}")
    from ascend_compat import data

    versions = tuple(data.native_op_versions())
    if not versions:
        return None
    if version is None:
        return versions[-1]
    try:
        key = data.resolve_version(version)
    except (KeyError, ValueError) as exc:
        raise SimConfigError(
            f"torch_npu version {version!r} is not one the simulator has op tables for; "
            f"known: {', '.join(versions)}"
        ) from exc
    if key not in versions:
        raise SimConfigError(
            f"torch_npu version {version!r} is not one the simulator has op tables for; "
            f"known: {', '.join(versions)}"
        )
    return key


def make_config(devices=1, float64="torch_npu", memory_capacity=None, soc="Ascend910B3",
                torch_npu_version=None, autograd_threads="caller") -> SimConfig:
    """Validate the arguments of ``install()`` and return the resulting :class:`SimConfig`."""
    return SimConfig(
        devices=_check_devices(devices),
        float64=check_float64(float64),
        memory_capacity=_check_capacity(memory_capacity),
        soc=_check_soc(soc),
        torch_npu_version=torch_npu_version,
        op_table_version=_resolve_version(torch_npu_version),
        autograd_threads=_check_autograd_threads(autograd_threads),
    )


_ENV_KEYS = (("ASCEND_COMPAT_SIM_DEVICES", "devices"), ("ASCEND_COMPAT_SIM_FLOAT64", "float64"),
             ("ASCEND_COMPAT_SIM_MEMORY", "memory_capacity"), ("ASCEND_COMPAT_SIM_SOC", "soc"),
             ("ASCEND_COMPAT_SIM_TORCH_NPU_VERSION", "torch_npu_version"),
             ("ASCEND_COMPAT_SIM_AUTOGRAD_THREADS", "autograd_threads"))


def implied_devices() -> int:
    """The device count without ``ASCEND_COMPAT_SIM_DEVICES``: ``max(1, LOCAL_WORLD_SIZE)`` under torchrun,
    else the default; read by :func:`env_arguments` and by ``_inherit`` (which must agree with it)."""
    raw = os.environ.get("LOCAL_WORLD_SIZE", "").strip()
    if raw:
        try:
            return int(_env_value("LOCAL_WORLD_SIZE", "devices", raw))
        except SimConfigError:
            pass
    return SimConfig().devices


def _env_value(var: str, key: str, raw: str):
    """The ``install()`` value for one variable; SimConfigError (naming the variable) if invalid."""
    value: object = raw
    if key == "devices":
        try:
            value = int(raw) if var != "LOCAL_WORLD_SIZE" else max(1, int(raw))
        except ValueError:
            raise SimConfigError(f"{var} must be an integer, got {raw!r}") from None
    try:
        make_config(**{key: value})
    except SimConfigError as exc:
        raise SimConfigError(f"{var}={raw!r}: {exc}") from None
    return value


def env_arguments(strict: bool = True) -> dict:
    """``install()`` keyword arguments from the ``ASCEND_COMPAT_SIM_*`` variables.

    Under torchrun (``LOCAL_WORLD_SIZE`` set) the default device count is
    ``max(1, LOCAL_WORLD_SIZE)``, as a real node has at least one NPU per local rank.
    An invalid value raises :class:`SimConfigError` naming the variable; with ``strict=False`` it
    is left out (the default applies) with one warning instead, so that a typo in the environment
    never stops the program that imported ascend_compat.
    """
    kwargs: dict = {}
    for var, key in _ENV_KEYS:
        raw = os.environ.get(var, "").strip()
        if not raw and key == "devices" and os.environ.get("LOCAL_WORLD_SIZE", "").strip():
            var, raw = "LOCAL_WORLD_SIZE", os.environ["LOCAL_WORLD_SIZE"].strip()
        if not raw:
            continue
        try:
            kwargs[key] = _env_value(var, key, raw)
        except SimConfigError as exc:
            if strict:
                raise
            problem = str(exc)
            prefix = f"{var}={raw!r}: "
            _env.warn_invalid(var, raw, problem[len(prefix):] if problem.startswith(prefix) else problem,
                              "using the default")
    return kwargs
