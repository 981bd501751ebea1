"""Every environment variable ascend-compat itself reads, in one place.

| variable | meaning |
| --- | --- |
| ``ASCEND_COMPAT_SIMULATE`` | ``1``: install the simulated NPU when ``ascend_compat`` is imported |
| ``ASCEND_COMPAT_SIM_DEVICES`` | number of simulated devices (default: 1, or ``LOCAL_WORLD_SIZE`` under torchrun) |
| ``ASCEND_COMPAT_SIM_FLOAT64`` | simulator float64 mode: ``torch_npu`` (default: as real torch_npu, ``x.double()`` on npu gives float32), ``warn``, ``strict`` (every float64 npu tensor raises), ``allow`` |
| ``ASCEND_COMPAT_SIM_MEMORY`` | simulated device capacity in bytes (suffixes K, M, G allowed); unset = unlimited |
| ``ASCEND_COMPAT_SIM_SOC`` | simulated SoC name (default ``Ascend910B3``) |
| ``ASCEND_COMPAT_SIM_TORCH_NPU_VERSION`` | torch_npu version whose op coverage and API the simulator emulates |
| ``ASCEND_COMPAT_SIM_AUTOGRAD_THREADS`` | where npu backward runs: ``caller`` (default, the calling thread) or ``device`` (torch's per-device worker threads, as on torch_npu) |
| ``ASCEND_COMPAT_NO_PATCH`` | ``1``: do not activate the runtime shim at import |
| ``ASCEND_COMPAT_DISABLE`` | comma-separated ecosystem integrations the shim must not apply when it activates: ``flash_attn``, ``apex``, ``xformers``, ``bitsandbytes`` (drop-in modules), ``transformers``, ``accelerate``, ``deepspeed``, ``lightning``, or ``all``; an unknown name is ignored with a warning. An explicit ``<integration>.apply()`` / ``_modules.install()`` still applies |
| ``ASCEND_COMPAT_DEVICE_CAPABILITY`` | ``major.minor`` that ``torch.cuda.get_device_capability()`` returns under the shim when the NPU reports none (default ``8.0``) |
| ``ASCEND_COMPAT_LOG_LEVEL`` | logging level of the ``ascend_compat`` logger (``DEBUG`` logs each translation once per call site) |
| ``ASCEND_COMPAT_NO_INHERIT`` | ``1``: processes started by a shimmed process are not shimmed (``ascend_compat._inherit``) |
| ``ASCEND_COMPAT_INHERIT`` | set by a shimmed process for its children: the backend they activate (not for users) |
| ``ASCEND_COMPAT_INHERIT_POLICIES`` | set by a shimmed process for its children: its opt-in policies (not for users) |
| ``ASCEND_COMPAT_INHERIT_NPU_USED`` | set by a shimmed process for its children: a file they create at exit when they used the NPU, so a launcher's exit notice speaks for its ranks (not for users) |
| ``ASCEND_COMPAT_CPU_OPS`` | comma-separated ops run on the CPU at run time (``aten::gelu,aten::mode``; ``ascend_compat.accuracy.cpu_ops``) |
| ``ASCEND_COMPAT_SIM_FAULTS`` | faults the simulated NPU injects (``aten::gelu=bias:0.05;aten::mm=error:507035``; ``simulator.faults``) |
| ``ASCEND_COMPAT_SIM_NODE`` | the simulated node's name in HCCL's logs when ``HCCL_IF_IP`` is unset (set per node by ``run --simulate --nodes``; default: the host name) |
| ``ASCEND_COMPAT_SIM_NUMERICS`` | ``npu`` (default): the simulated NPU honours torch_npu's HF32 switches (convolution on, matmul off); ``exact``: exact float32 (``simulator.numerics``) |

The simulator's variables are parsed by ``simulator._config`` (``env_arguments``), the others by the
modules named; this table is their one list (``tests/test_config_table.py`` keeps it complete).
Values are read when asked for, not cached, so tests and launchers can set them just before use.
An invalid value never stops the program: it is ignored with one warning on stderr (through the
``ascend_compat`` logger) saying which values are accepted.
"""
from __future__ import annotations

import os

TRUE_VALUES = frozenset({"1", "true", "yes", "on"})
FALSE_VALUES = frozenset({"", "0", "false", "no", "off"})
_warned: set = set()


def warn_invalid(name: str, value: str, problem: str, instead: str) -> None:
    """Warn once per (variable, value): ``ignoring NAME='value': PROBLEM; INSTEAD``."""
    if (name, value) in _warned:
        return
    _warned.add((name, value))
    import logging

    logging.getLogger("ascend_compat").warning(
        "ascend-compat: ignoring %s=%r: %s; %s", name, value, problem, instead)


def flag(name: str) -> bool:
    """True when environment variable ``name`` is set to a true-like value (1/true/yes/on).

    Any other value than those and 0/false/no/off (or empty) counts as false, with a warning.
    """
    value = os.environ.get(name, "").strip().lower()
    if value in TRUE_VALUES:
        return True
    if value not in FALSE_VALUES:
        warn_invalid(name, os.environ[name], "expected 1/true/yes/on or 0/false/no/off", "treating it as off")
    return False


def simulate_requested() -> bool:
    return flag("ASCEND_COMPAT_SIMULATE")


def no_patch_requested() -> bool:
    return flag("ASCEND_COMPAT_NO_PATCH")


def disabled_integrations() -> frozenset[str]:
    """Lower-cased names listed in ``ASCEND_COMPAT_DISABLE`` (validated by the shim's ecosystem patches)."""
    raw = os.environ.get("ASCEND_COMPAT_DISABLE", "")
    return frozenset(part.strip().lower().replace("-", "_") for part in raw.split(",") if part.strip())


def parse_bytes(text: str) -> int:
    """Parse ``"4096"``, ``"512M"``, ``"2G"``, ``"1.5GiB"`` into a byte count; raises ValueError."""
    s = text.strip().upper().removesuffix("IB").removesuffix("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    if s and s[-1] in scale:
        value = float(s[:-1]) * scale[s[-1]]
    else:
        value = float(s)
    if value < 0:
        raise ValueError(f"byte count must not be negative: {text!r}")
    return int(value)
