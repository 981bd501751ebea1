"""NPU-specific configuration of the simulated ``torch.npu``: options, HF32, compile mode, dumps, limits.

These switches tune the real CANN compiler and runtime. The simulator validates arguments as
torch_npu does and records the values so that getters answer consistently, but host execution is
unaffected (dumps write no files), except the HF32 switches ``matmul.allow_hf32`` and
``conv.allow_hf32``, which :mod:`ascend_compat.simulator.numerics` honours.
"""
from __future__ import annotations

import contextlib
import enum
import os
import warnings
from typing import Any, Dict, Optional

import torch

from ascend_compat.simulator import numerics

from . import device as _dev
from . import properties as _props
from ._errors import pta_error, unsupported

_options: Dict[str, str] = {}

# allowed values per option, as torch_npu validates them (set_option)
_OPTION_VALUES = {
    "ACL_PRECISION_MODE": ["allow_fp32_to_fp16", "must_keep_origin_dtype"],
    "ACL_OP_SELECT_IMPL_MODE": ["high_performance", "high_precision"],
    "ACL_AICORE_NUM": lambda v: v.isdigit() and 1 <= int(v) <= 32,
    "ACL_OPTYPELIST_FOR_IMPLMODE": None,
    "ACL_OP_DEBUG_LEVEL": ["0", "1", "2", "3", "4"],
    "ACL_DEBUG_DIR": None,
    "ACL_OP_COMPILER_CACHE_MODE": ["disable", "enable", "force"],
    "ACL_OP_COMPILER_CACHE_DIR": None,
    "ACL_OP_DEBUG_OPTION": None,
}
_DEPRECATED_OPTIONS = {"ACL_OP_SELECT_IMPL_MODE", "ACL_OPTYPELIST_FOR_IMPLMODE"}


def get_option(name: str) -> Optional[str]:
    """The recorded value of an option (None when never set)."""
    return _options.get(name)


def set_option(option: Dict[str, Any]) -> None:
    """Validate and record CANN options (``{"ACL_PRECISION_MODE": "must_keep_origin_dtype"}``, ...)."""
    if not isinstance(option, dict):
        raise TypeError("npu option must be a dict." + pta_error("PARAM"))
    if option.get("MM_BMM_ND_ENABLE") == "enable":
        set_mm_bmm_format_nd(True)
    elif option.get("MM_BMM_ND_ENABLE") == "disable":
        set_mm_bmm_format_nd(False)
    for name, value in option.items():
        value = str(value)
        rule = _OPTION_VALUES.get(name)
        ok = rule is None or (rule(value) if callable(rule) else value in rule)
        if not ok:
            allowed = "1..32" if callable(rule) else rule
            raise ValueError(f"value of {name} should be in {allowed} but got {value}" + pta_error("PARAM"))
        if name in _DEPRECATED_OPTIONS:
            warnings.warn(f"{name} will be deprecated in a future version. The accuracy or performance "
                          f"may not be optimal when configuring this option. We do not recommend setting it.")
        _options[name] = value


def set_compile_mode(jit_compile: bool = False) -> None:
    """Record whether operators would be JIT-compiled (the usual recommendation is ``False``)."""
    _options["jitCompile"] = "enable" if jit_compile else "disable"


def is_jit_compile_false() -> bool:
    """True unless ``set_compile_mode(jit_compile=True)`` was called (torch_npu's default on 910B)."""
    _dev._lazy_init()
    return _options.get("jitCompile", "disable") == "disable"


def set_aoe(dump_path: str) -> None:
    """Record AOE auto-tuning; creates ``dump_path`` as torch_npu does (no tuning data is produced)."""
    if not isinstance(dump_path, (str, os.PathLike)):
        raise TypeError("Type of dump_path is invalid." + pta_error("TYPE"))
    try:
        os.makedirs(dump_path, mode=0o750, exist_ok=True)
    except OSError:
        raise OSError("Value of dump_path is invalid." + pta_error("INTERNAL")) from None
    _options.update(autotune="enable", autotunegraphdumppath=str(dump_path))


_mm_bmm_nd = True


def set_mm_bmm_format_nd(is_nd: bool = True) -> None:
    global _mm_bmm_nd
    _mm_bmm_nd = bool(is_nd)


def get_mm_bmm_format_nd() -> bool:
    return _mm_bmm_nd


def init_dump() -> None:
    """Record that operator dumping is on (the simulator writes no dump files)."""
    _options["mdldumpswitch"] = "enable"


def set_dump(cfg_file: str) -> None:
    if not os.path.exists(cfg_file):
        raise AssertionError(f"cfg_file {cfg_file} path does not exists." + pta_error("NOT_FOUND"))
    _options["mdldumpconfigpath"] = os.path.realpath(cfg_file)


def finalize_dump() -> None:
    _options["mdldumpswitch"] = "disable"


class CubeMathType(enum.IntEnum):
    """Precision modes of the cube (matrix) unit; values as in torch_npu."""

    KEEP_DTYPE = 0
    ALLOW_FP32_DOWN_PRECISION = 1
    USE_FP16 = 2
    USE_HF32 = 3
    FORCE_GRP_ACC_FOR_FP32 = 4
    USE_FP32_ADD = 4


def _check_bool(value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"allow_hf32 must be a bool, but got {type(value).__name__}{pta_error('TYPE')}")


class _NpuConfig:
    """``torch.npu.config.allow_internal_format`` (recorded)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "allow_internal_format":
            _options["ALLOW_INTERNAL_FORMAT"] = "enable" if value else "disable"

    def __getattr__(self, name: str) -> Any:
        if name == "allow_internal_format":
            return _options.get("ALLOW_INTERNAL_FORMAT", "disable") == "enable"
        raise AttributeError(name)


class _MatmulConfig:
    """``torch.npu.matmul.allow_hf32`` (default False) and ``cube_math_type``."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "allow_hf32":
            _check_bool(value)
            _options["ALLOW_MATMUL_HF32"] = "enable" if value else "disable"
            numerics.sync()
        elif name == "cube_math_type":
            if not isinstance(value, CubeMathType):
                raise TypeError(f"value should be one of Enum CubeMathType when setting cube_math_type, "
                                f"but got {type(value)}")
            _options["CUBE_MATH_TYPE"] = str(int(value))

    def __getattr__(self, name: str) -> Any:
        if name == "allow_hf32":
            return _options.get("ALLOW_MATMUL_HF32") == "enable"
        if name == "cube_math_type":
            value = _options.get("CUBE_MATH_TYPE")
            return CubeMathType(int(value)) if value else None
        return None


class _ConvConfig:
    """``torch.npu.conv.allow_hf32`` (default True)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "allow_hf32":
            _check_bool(value)
            _options["ALLOW_CONV_HF32"] = "enable" if value else "disable"
            numerics.sync()

    def __getattr__(self, name: str) -> Any:
        if name == "allow_hf32":
            return _options.get("ALLOW_CONV_HF32", "enable") in ("", "enable")
        return None


config = _NpuConfig()
matmul = _MatmulConfig()
conv = _ConvConfig()


# ---------------------------------------------------------------------------- device core limits

_device_limits: Dict[int, Dict[str, int]] = {}
_device_limit_set = False


def _check_int_device(device: Any) -> None:
    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(f"device must be an int, but got {type(device).__name__}{pta_error('TYPE')}")
    if device < 0 or device >= _dev.device_count():
        raise AssertionError("Invalid device id" + pta_error("VALUE"))


def set_device_limit(device: int, cube_num: int = -1, vector_num: int = -1) -> None:
    """Record core limits for ``device``; like torch_npu, may be called only once per process."""
    global _device_limit_set
    if _device_limit_set:
        raise RuntimeError("Function 'set_device_limit' has already been called, "
                           "You can only set this interface once.")
    _device_limit_set = True
    _check_int_device(device)
    _dev._lazy_init()
    limits = _device_limits.setdefault(device, {})
    if cube_num != -1:
        limits["cube_core_num"] = int(cube_num)
    if vector_num != -1:
        limits["vector_core_num"] = int(vector_num)


def get_device_limit(device: int) -> Dict[str, int]:
    """Core limits of ``device``: the recorded ones, else the SoC's core counts."""
    _check_int_device(device)
    _dev._lazy_init()
    spec = _dev.current_soc()
    out = {"cube_core_num": spec.cube_core_num, "vector_core_num": spec.vector_core_num}
    out.update(_device_limits.get(device, {}))
    return out


# ---------------------------------------------------------------------------- overflow detection


def get_npu_overflow_flag() -> bool:
    """Only for SoCs without inf/nan support (910A); there the simulated overflow status is always clear."""
    if _props.is_support_inf_nan() and os.environ.get("FORCE_OVERFLOW_CHECK", "0") != "1":
        raise RuntimeError("Unsupported api when soc_version >= Ascend910B1, please use npu_check_overflow"
                           + pta_error("NOT_SUPPORT"))
    return False


def clear_npu_overflow_flag() -> None:
    if _props.is_support_inf_nan() and os.environ.get("FORCE_OVERFLOW_CHECK", "0") != "1":
        warnings.warn("When soc_version >= Ascend910B1, clear_npu_overflow_flag is useless. Please remove it.")


def npu_check_overflow(grad: Any) -> bool:
    """True when ``grad`` (a float or tensor) sums to inf/-inf/nan, as torch_npu checks on 910B."""
    if isinstance(grad, float):
        total = grad
    elif isinstance(grad, torch.Tensor):
        total = float(grad.float().sum())
    else:
        raise RuntimeError("Unsupported type." + pta_error("TYPE"))
    return total in (float("inf"), float("-inf")) or total != total


# ---------------------------------------------------------------------------- determinism


class _DeterministicBegin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor):
        torch.use_deterministic_algorithms(True)
        return tensor

    @staticmethod
    def backward(ctx, grad):
        torch.use_deterministic_algorithms(False)
        return grad


class _DeterministicEnd(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor):
        torch.use_deterministic_algorithms(False)
        return tensor

    @staticmethod
    def backward(ctx, grad):
        torch.use_deterministic_algorithms(True)
        return grad


def enable_deterministic_with_backward(tensor: torch.Tensor) -> torch.Tensor:
    """Turn deterministic algorithms on here in forward, and off again at this point in backward."""
    return _DeterministicBegin.apply(tensor)


def disable_deterministic_with_backward(tensor: torch.Tensor) -> torch.Tensor:
    """Turn deterministic algorithms off here in forward, and on again at this point in backward."""
    return _DeterministicEnd.apply(tensor)


_deterministic_level = 0


def set_deterministic_level(level: int) -> None:
    """Record the determinism level and align ``torch.use_deterministic_algorithms`` as torch_npu does."""
    global _deterministic_level
    enabled = torch.are_deterministic_algorithms_enabled()
    msg = ("The current configuration value of 'torch_npu.npu.set_deterministic_level' "
           "conflicts with 'torch.use_deterministic_algorithms'. "
           "'torch.use_deterministic_algorithms' has been configured to '{}'.")
    if level == 0 and enabled:
        warnings.warn(msg.format("False"))
        torch.use_deterministic_algorithms(False)
    elif level >= 1 and not enabled:
        warnings.warn(msg.format("True"))
        torch.use_deterministic_algorithms(True)
    _deterministic_level = int(level)
    warnings.warn("After using 'torch_npu.npu.set_deterministic_level', please do not use "
                  "'torch.use_deterministic_algorithms' anymore, as it may cause unknown errors.")


def use_compatible_impl(is_enable: bool) -> None:
    _options["TORCH_NPU_USE_COMPATIBLE_IMPL"] = "1" if is_enable else "0"


def are_compatible_impl_enabled() -> bool:
    return _options.get("TORCH_NPU_USE_COMPATIBLE_IMPL") == "1"


# ---------------------------------------------------------------------------- mstx (NVTX analogue)


class mstx:
    """Profiler annotations. Emulated: marks and ranges are validated and kept in memory (no profiler)."""

    marks: list = []
    _stacks: Dict[str, list] = {}
    _next_id = 1

    @staticmethod
    def mark(message: str, stream: Any = None, domain: str = "default") -> None:
        if not message or not isinstance(message, str):
            warnings.warn("Invalid message for mstx.mark function. Please provide a valid message string.")
            return
        mstx.marks.append((domain, message))

    @staticmethod
    def range_push(message: str, stream: Any = None, domain: str = "default") -> int:
        if not message or not isinstance(message, str):
            warnings.warn("Invalid message for mstx.range_push func. Please input valid message string.")
            return -1
        stack = mstx._stacks.setdefault(domain, [])
        stack.append(message)
        return len(stack) - 1

    @staticmethod
    def range_pop(domain: str = "default") -> int:
        stack = mstx._stacks.setdefault(domain, [])
        if not stack:
            return -1
        stack.pop()
        return len(stack)

    @staticmethod
    def range_start(message: str, stream: Any = None, domain: str = "default") -> int:
        if not message or not isinstance(message, str):
            warnings.warn("Invalid message for mstx.range_start function. Please provide a valid message string.")
            return 0
        range_id = mstx._next_id
        mstx._next_id += 1
        return range_id

    @staticmethod
    def range_end(range_id: int, domain: str = "default") -> None:
        if not isinstance(range_id, int):
            warnings.warn("Invalid message for mstx.range_end function. "
                          "Please provide the return value from mstx.range_start.")

    @staticmethod
    @contextlib.contextmanager
    def mstx_range(message: str, stream: Any = None, domain: str = "default"):
        range_id = mstx.range_start(message, stream, domain)
        try:
            yield
        finally:
            mstx.range_end(range_id, domain)


# ---------------------------------------------------------------------------- model obfuscation


def obfuscation_initialize(*args: Any, **kwargs: Any):
    raise unsupported("obfuscation_initialize", "model obfuscation runs inside the NPU's trusted "
                      "execution environment, which a host simulation cannot provide")


def obfuscation_finalize(*args: Any, **kwargs: Any):
    raise unsupported("obfuscation_finalize", "model obfuscation runs inside the NPU's trusted "
                      "execution environment, which a host simulation cannot provide")


def obfuscation_calculate(*args: Any, **kwargs: Any):
    raise unsupported("obfuscation_calculate", "model obfuscation runs inside the NPU's trusted "
                      "execution environment, which a host simulation cannot provide")


# ---------------------------------------------------------------------------- SDPA backend switches


def _sdp_warn(kind: str) -> None:
    warnings.warn(f"Currently, the device operator does not support {kind} sdp and only sets the global variable!")


def flash_sdp_enabled() -> bool:
    _sdp_warn("flash")
    return torch._C._get_flash_sdp_enabled()


def enable_flash_sdp(enabled: bool) -> None:
    _sdp_warn("flash")
    torch._C._set_sdp_use_flash(enabled)


def mem_efficient_sdp_enabled() -> bool:
    _sdp_warn("mem_efficient")
    return torch._C._get_mem_efficient_sdp_enabled()


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp_warn("mem_efficient")
    torch._C._set_sdp_use_mem_efficient(enabled)


def math_sdp_enabled() -> bool:
    _sdp_warn("math")
    return torch._C._get_math_sdp_enabled()


def enable_math_sdp(enabled: bool) -> None:
    _sdp_warn("math")
    torch._C._set_sdp_use_math(enabled)


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True):
    """Temporarily set the three SDPA backend flags (global variables only, as in torch_npu)."""
    prev = (torch._C._get_flash_sdp_enabled(), torch._C._get_mem_efficient_sdp_enabled(),
            torch._C._get_math_sdp_enabled())
    warnings.warn("Currently, the device operator does not support flash, math, mem_efficient sdp "
                  "and only sets the global variable!")
    try:
        torch._C._set_sdp_use_flash(enable_flash)
        torch._C._set_sdp_use_mem_efficient(enable_mem_efficient)
        torch._C._set_sdp_use_math(enable_math)
        yield {}
    finally:
        torch._C._set_sdp_use_flash(prev[0])
        torch._C._set_sdp_use_mem_efficient(prev[1])
        torch._C._set_sdp_use_math(prev[2])


def preferred_linalg_library(backend: Any = None):
    warnings.warn("torch.npu.preferred_linalg_library isn't implemented!")
    return torch._C._LinalgBackend.Default
