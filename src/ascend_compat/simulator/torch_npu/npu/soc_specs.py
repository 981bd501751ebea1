"""Per-SoC facts the simulated ``torch.npu`` reports (device properties, bf16 support, HBM size).

Sources (public):
- Field set and which fields torch_npu fills: Ascend/pytorch ``torch_npu/csrc/npu/Module.cpp``
  (``initDeviceProperty``): ``name`` = ``aclrtGetSocName()``, ``total_memory`` = HBM total from
  ``aclrtGetMemInfo``, ``cube_core_num`` = ``ACL_DEVICE_INFO_AI_CORE_NUM``, ``vector_core_num``,
  ``L2_cache_size``, ``uuid``. The CUDA-compatibility fields (major, minor, is_multi_gpu_board,
  is_integrated, multi_processor_count, max_threads_per_multi_processor, warp_size,
  regs_per_multiprocessor, gcnArchName) are ``std::optional`` that torch_npu never sets, so real
  hardware reports ``None`` for them; the simulator does the same.
- Core counts, L2 and HBM: Huawei Atlas 800T/900 A2 product documentation and public logs of
  ``torch.npu.get_device_properties`` (e.g. ``_NPUDeviceProperties(name='Ascend910B2C', total_memory=62432MB)``:
  the driver reserves part of the nominal 64 GB HBM, so torch_npu reports 62432 MiB on 64 GB parts).
  Values for SoCs without such a log are nominal capacities less the same reserve ratio, and are
  marked ``approximate``.
- SoC version numbers: torch_npu's ``SocVersion`` enum (``torch_npu/csrc/core/npu/NpuVariables.h``).
- bf16: supported from the Atlas A2 generation (910B*) on; not on 910A/310P (``is_bf16_supported``).
"""
from __future__ import annotations

from dataclasses import dataclass

MiB = 1 << 20


@dataclass(frozen=True)
class SocSpec:
    name: str
    cube_core_num: int
    vector_core_num: int
    l2_cache_size: int
    total_memory: int  # bytes, as torch_npu reports it (after the driver's reserve)
    bf16: bool
    support_inf_nan: bool  # 910B and later saturate to inf/nan instead of raising overflow flags
    soc_version: int = -1  # torch_npu's SocVersion enum value (get_soc_version())
    approximate: bool = False


_A2_HBM64 = 62432 * MiB  # observed on 64 GB Atlas A2 parts
_A2_HBM32 = 31216 * MiB  # approximate: half of the 64 GB figure

SOCS: dict[str, SocSpec] = {
    s.name: s
    for s in (
        SocSpec("Ascend910A", 32, 32, 32 * MiB, 31216 * MiB, False, False, 102, approximate=True),
        SocSpec("Ascend910ProA", 32, 32, 32 * MiB, 31216 * MiB, False, False, 101, approximate=True),
        SocSpec("Ascend910B1", 24, 48, 192 * MiB, _A2_HBM64, True, True, 220),
        SocSpec("Ascend910B2", 24, 48, 192 * MiB, _A2_HBM64, True, True, 221),
        SocSpec("Ascend910B2C", 24, 48, 192 * MiB, _A2_HBM64, True, True, 222),
        SocSpec("Ascend910B3", 20, 40, 192 * MiB, _A2_HBM64, True, True, 223),
        SocSpec("Ascend910B4", 20, 40, 96 * MiB, _A2_HBM32, True, True, 224, approximate=True),
        SocSpec("Ascend910B4_1", 20, 40, 96 * MiB, _A2_HBM64, True, True, 225, approximate=True),
        SocSpec("Ascend910_9391", 24, 48, 192 * MiB, _A2_HBM64, True, True, 250, approximate=True),
        SocSpec("Ascend910_9392", 24, 48, 192 * MiB, _A2_HBM64, True, True, 251, approximate=True),
        SocSpec("Ascend910_9381", 24, 48, 192 * MiB, _A2_HBM64, True, True, 252, approximate=True),
        SocSpec("Ascend910_9382", 24, 48, 192 * MiB, _A2_HBM64, True, True, 253, approximate=True),
        SocSpec("Ascend310P3", 8, 7, 16 * MiB, 44280 * MiB, False, False, 202, approximate=True),
    )
}

DEFAULT_SOC = "Ascend910B3"


def soc_spec(name: str | None) -> SocSpec:
    """The spec for SoC ``name`` (``None`` = the default Ascend910B3); ValueError lists the known names."""
    key = name or DEFAULT_SOC
    try:
        return SOCS[key]
    except KeyError:
        raise ValueError(
            f"unknown simulated SoC {key!r}; choose one of: {', '.join(sorted(SOCS))}"
        ) from None
