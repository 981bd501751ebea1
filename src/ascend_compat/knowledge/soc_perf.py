"""Performance figures of Ascend SoCs for the plan's roofline model: one table, every figure with its source.

Device memory sizes live in the simulator's SoC table (``simulator/torch_npu/npu/soc_specs.py``, what
``torch.npu.get_device_properties().total_memory`` reports); this table adds what a step-time estimate
needs. All figures are nominal peaks; measured efficiency is lower (see ``efficiency``).

Sources:

[1] Cube unit: 16x16x16 FP16 multiply-accumulates per cycle per AI core (4096 MACs = 8192 FLOP/cycle),
    FP32 at a quarter of that: Huawei, "DaVinci: A Scalable Architecture for Neural Network Computing",
    Hot Chips 31 (2019), old.hotchips.org/hc31/HC31_1.11_Huawei.Davinci.HengLiao_v4.0.pdf; the fp32:fp16
    ratio also in Huawei's AKG roofline configs (github.com/mindspore-ai/akg, akg_agents roofline arch
    configs: MAC_per_cycle fp32 = fp16 / 4).
[2] AI-core counts: what torch_npu reports (``cube_core_num``, the simulator's SoC table).
[3] Clock: 1.91 GHz, the clock that makes [1] x [2] give the widely quoted 313 TFLOPS (Ascend910B3, 20
    cores) and 376 TFLOPS (Ascend910B2, 24 cores) FP16 figures; the Ascend 910 (32 cores, 256 TFLOPS,
    Huawei 2019 launch) runs at about 1 GHz. Values derived this way are marked ``derived``.
[4] HBM bandwidth: Huawei's AKG roofline arch configs (github.com/mindspore-ai/akg): 1.8 TB/s for
    Ascend910B1/B2, 1.6 TB/s for Ascend910B3, 0.8 TB/s for Ascend910B4.
[5] Interconnect: Atlas 800T A2 / 900 A2 PoD documentation (hiascend.com): eight NPUs per node in a
    full HCCS mesh, 7 links of 56 GB/s (392 GB/s per NPU); one 200GE RoCE port per NPU between nodes
    (25 GB/s). Latencies are order-of-magnitude assumptions (HCCS 10 us, RoCE 20 us per step) until
    measured figures are published.
[6] Ascend 910 (A1): 256 TFLOPS FP16, 32 GB HBM2 at 1.2 TB/s, HCCS 30 GB/s links (Huawei Ascend 910
    launch material, 2019).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

TFLOPS = 1e12
GBps = 1e9


@dataclass(frozen=True)
class SocPerf:
    name: str
    cube_fp16: float  # FLOP/s, also bfloat16 (A2 on) and HF32
    cube_fp32: float  # FLOP/s
    vector: float  # FLOP/s for elementwise work (rarely the bound: HBM is)
    hbm_bandwidth: float  # bytes/s
    hccs_bandwidth: float  # bytes/s per NPU inside a node (all links)
    hccs_latency: float  # s per algorithm step
    roce_bandwidth: float  # bytes/s per NPU between nodes
    roce_latency: float  # s per algorithm step
    node_size: int = 8
    sources: str = ""
    derived: bool = False


def _a2(name: str, cores: int, hbm: float, note: str = "") -> SocPerf:
    fp16 = cores * 8192 * 1.91e9  # [1] x [2] x [3]
    return SocPerf(name, fp16, fp16 / 4, fp16 / 16, hbm, 392 * GBps, 10e-6, 25 * GBps, 20e-6,
                   sources="[1][2][3][4][5]" + note, derived=True)


SOCS: dict = {p.name: p for p in (
    SocPerf("Ascend910A", 256 * TFLOPS, 64 * TFLOPS, 16 * TFLOPS, 1200 * GBps, 210 * GBps, 10e-6, 12.5 * GBps,
            20e-6, sources="[6]"),
    SocPerf("Ascend910ProA", 256 * TFLOPS, 64 * TFLOPS, 16 * TFLOPS, 1200 * GBps, 210 * GBps, 10e-6, 12.5 * GBps,
            20e-6, sources="[6]"),
    _a2("Ascend910B1", 24, 1800 * GBps),
    _a2("Ascend910B2", 24, 1800 * GBps),
    _a2("Ascend910B2C", 24, 1800 * GBps),
    _a2("Ascend910B3", 20, 1600 * GBps),
    _a2("Ascend910B4", 20, 800 * GBps),
    _a2("Ascend910B4_1", 20, 800 * GBps),
    _a2("Ascend910_9391", 24, 1600 * GBps, " (per die of an A3 package)"),
    _a2("Ascend910_9392", 24, 1600 * GBps, " (per die of an A3 package)"),
    _a2("Ascend910_9381", 24, 1600 * GBps, " (per die of an A3 package)"),
    _a2("Ascend910_9382", 24, 1600 * GBps, " (per die of an A3 package)"),
)}

#: fraction of peak a well-tuned kernel reaches; the roofline divides by it (matmul, memory-bound)
efficiency = {"cube": 0.7, "memory": 0.8, "comm": 0.8}


def perf(name: str) -> Optional[SocPerf]:
    """The figures for SoC ``name``, or None when the table has none (Ascend310P: inference only)."""
    return SOCS.get(name)
