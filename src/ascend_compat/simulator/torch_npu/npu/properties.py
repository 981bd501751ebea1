"""Device properties and SoC queries of the simulated ``torch.npu`` (values from :mod:`.soc_specs`).

``get_device_properties()`` returns an ``_NPUDeviceProperties`` with torch_npu's fields; the
CUDA-compatibility fields are None, as torch_npu leaves them unset on real hardware.
``get_device_capability()`` returns None with a warning unless ``TORCH_NPU_DEVICE_CAPABILITY``
is ``"major.minor"``. ``get_cann_version()`` reports a CANN release tagged ``+simulated``.
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Optional, Tuple

import torch

from ascend_compat import _versions

from .device import (_check_valid, _get_device_index, _lazy_init, _state, base_capacity, config, current_soc,
                     parse_capability)
from .soc_specs import SocSpec

def get_device_name(device_name: Any = None) -> str:
    """The SoC name, e.g. ``"Ascend910B3"`` (torch_npu ignores the index beyond validating it)."""
    device_id = _get_device_index(device_name, optional=True)
    _check_valid(device_id)
    return current_soc().name


class _CUuuid:
    """A device UUID object with ``bytes`` and a dashed ``str`` form, like torch_npu's ``_CUuuid``."""

    def __init__(self, raw: bytes):
        self.bytes = list(raw)

    def __str__(self) -> str:
        h = bytes(self.bytes).hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    __repr__ = __str__


class _NPUDeviceProperties:
    """Read-only device properties with torch_npu's field names and repr."""

    __slots__ = (
        "name", "total_memory", "cube_core_num", "vector_core_num", "L2_cache_size", "major", "minor",
        "is_multi_gpu_board", "is_integrated", "multi_processor_count", "max_threads_per_multi_processor",
        "warp_size", "regs_per_multiprocessor", "gcnArchName", "uuid",
    )

    def __init__(self, spec: SocSpec, index: int, total_memory: int):
        values = dict(
            name=spec.name, total_memory=total_memory, cube_core_num=spec.cube_core_num,
            vector_core_num=spec.vector_core_num, L2_cache_size=spec.l2_cache_size,
            major=None, minor=None, is_multi_gpu_board=None, is_integrated=None,
            multi_processor_count=None, max_threads_per_multi_processor=None, warp_size=None,
            regs_per_multiprocessor=None, gcnArchName=None,
            # deterministic per (SoC, index), marked as simulated by the 'a5c0' prefix
            uuid=_CUuuid(bytes.fromhex("a5c0") + spec.name.encode()[:10].ljust(10, b"\0") + index.to_bytes(4, "big")),
        )
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, key, value):
        raise AttributeError(f"can't set attribute '{key}' of _NPUDeviceProperties")

    def __repr__(self) -> str:
        mib = 1 << 20
        return (
            f"_NPUDeviceProperties(name='{self.name}', total_memory={self.total_memory // mib}MB, "
            f"cube_core_num={self.cube_core_num}, vector_core_num={self.vector_core_num}, "
            f"uuid={self.uuid}, L2_cache_size={self.L2_cache_size // mib}MB)"
        )


def device_total_memory(index: int) -> int:
    """Total memory the device reports: the configured capacity if one was set, else the SoC's HBM."""
    return base_capacity(index)


def get_device_properties(device_name: Any = None) -> _NPUDeviceProperties:
    """``_NPUDeviceProperties`` of a simulated device (SoC facts from ``soc_specs``)."""
    device_id = _get_device_index(device_name, optional=True)
    _check_valid(device_id)
    _lazy_init()
    return _NPUDeviceProperties(current_soc(), device_id, device_total_memory(device_id))


_CAPABILITY_NOTE = (
    "The return value of get_device_capability is only for compatibility with PyTorch "
    "and does not represent the actual capability of the NPU device."
)


def get_device_capability(device: Any = None) -> Optional[Tuple[int, int]]:
    """None with a warning, unless ``TORCH_NPU_DEVICE_CAPABILITY="major.minor"`` is set (then that tuple)."""
    env = os.getenv("TORCH_NPU_DEVICE_CAPABILITY")
    if not env:
        warnings.warn(
            "You can set the device capability via the environment variable TORCH_NPU_DEVICE_CAPABILITY. "
            + _CAPABILITY_NOTE
        )
        return None
    parsed = parse_capability(env)
    if parsed is None:
        warnings.warn(
            f"torch.npu.get_device_capability can't parse TORCH_NPU_DEVICE_CAPABILITY environment variable: {env}. "
            "Expected format is 'major.minor' where major and minor are non-negative integers (e.g., '8.0')."
        )
        return None
    warnings.warn(_CAPABILITY_NOTE)
    return parsed


def current_blas_handle() -> None:
    warnings.warn("NPU does not use blas handle.")
    return None


def is_bf16_supported(including_emulation: bool = False) -> bool:
    """bf16 support of the simulated SoC (True from the 910B generation on)."""
    _lazy_init()
    return current_soc().bf16


def is_support_inf_nan() -> bool:
    """True on SoCs that saturate to inf/nan (910B and later) instead of setting overflow flags."""
    _lazy_init()
    return current_soc().support_inf_nan


def get_soc_version() -> int:
    """torch_npu's SocVersion number of the simulated SoC (e.g. 223 for Ascend910B3)."""
    _lazy_init()
    return current_soc().soc_version


_CANN_MODULES = ("CANN", "RUNTIME", "COMPILER", "HCCL", "TOOLKIT", "OPP", "OPP_KERNEL", "DRIVER")
SIMULATED_MARK = "+simulated"


def simulated_cann_version() -> str:
    """The CANN release paired with the emulated torch_npu line in the generated version matrix (the
    newest known pairing when that line has none), tagged ``+simulated`` so it cannot be mistaken for
    an installed toolkit; still PEP 440 parseable (``packaging.version.Version``)."""
    version = getattr(config(), "torch_npu_version", None) if _state().config is not None else None
    try:
        from ascend_compat import data

        rows = [r for r in data.version_matrix() if r.get("cann")]
    except Exception:
        rows = []
    line = _versions.minor(version) if version else None
    paired = [r["cann"] for r in rows if line and _versions.minor(r["torch_npu"]) == line]
    candidates = paired or [r["cann"] for r in rows] or ["9.1.0"]
    return max(candidates, key=_versions.cann_key) + SIMULATED_MARK


def get_cann_version(module: str = "CANN") -> str:
    """A simulated CANN version such as ``"9.1.0+simulated"``; unknown module names return "" as torch_npu does."""
    if module not in _CANN_MODULES:
        return ""
    return simulated_cann_version()


def get_amp_supported_dtype() -> list:
    """Dtypes ``torch.autocast("npu")`` accepts: fp16, bf16 (when supported) and fp32."""
    if is_bf16_supported():
        return [torch.float16, torch.bfloat16, torch.float32]
    return [torch.float16, torch.float32]
