"""``ascend-compat plan`` at full size, with its cost, next to the analytic figure and the published estimators.

Configurations (the same for every tool): a Llama-style 7B (h=4096, L=32, a=32, ffn=11008, V=32000, s=2048, micro-batch
1) trained with AdamW, (A) on one NPU with bf16 autocast, (B) FSDP2 on 8 NPUs with bf16 mixed precision, built on
the meta device and materialised per shard (``tests/plan/scripts/llama_train.py --init meta``).

Prints, per configuration: the plan's per-rank peak allocated/reserved and verdict on a 64 GB Ascend910B3 (60.97 GiB
usable), its wall time and the largest resident set of its processes; the analytic figure (16 bytes per
parameter over the ranks for mixed-precision AdamW state, plus Korthikanti et al. 2022's activations per layer
``s·b·h·(34 + 5·a·s/h)``, and ``34·s·b·h`` when attention scores are not stored, as with the fused attention kernel);
accelerate's ``estimate-memory`` training figure (its ``estimate_training_usage``: parameter bytes only); DeepSpeed's
ZeRO model-state estimators; and a torchtitan-style estimate with PyTorch's own tools (``FakeTensorMode``, a fake
process group and ``torch.distributed._tools.fsdp2_mem_tracker.FSDPMemTracker``) of (B): same model, sharding,
optimizer and device (``_fsdp_mem_tracker.py``).

Run: ``python benchmarks/bench_plan.py`` (about 3 minutes on 2 cores; ``--quick`` skips the 8-rank plan).
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LLAMA = REPO / "tests" / "plan" / "scripts" / "llama_train.py"
CFG = dict(h=4096, L=32, a=32, ffn=11008, V=32000, s=2048, b=1)
ARGS = ["--dim", "4096", "--layers", "32", "--heads", "32", "--ffn", "11008", "--vocab", "32000", "--seq", "2048",
        "--batch-size", "1"]
GiB = 1 << 30


def params() -> int:
    h, L, ffn, V = CFG["h"], CFG["L"], CFG["ffn"], CFG["V"]
    return V * h + L * (4 * h * h + 3 * h * ffn + 2 * h) + h + h * V


def analytic(ranks: int) -> dict:
    s, b, h, a, L = CFG["s"], CFG["b"], CFG["h"], CFG["a"], CFG["L"]
    state = 16 * params() / ranks
    act_full = s * b * h * (34 + 5 * a * s / h) * L
    act_fused = 34 * s * b * h * L
    return {"state": state, "activations": act_fused, "total": state + act_fused, "total_with_scores": state + act_full}


def plan(extra, devices=1) -> tuple:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "plan", "--format", "json", "--steps", "2",
                           "--devices", str(devices), str(LLAMA), *ARGS, *extra],
                          capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - start
    rss = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) * 1024
    if not proc.stdout:
        raise SystemExit(proc.stderr[-3000:])
    return json.loads(proc.stdout), wall, rss


def accelerate_estimate() -> float:
    from accelerate.commands.estimate import estimate_training_usage

    # what `accelerate estimate-memory --dtypes bfloat16` prints as "Training using Adam (Peak vRAM)"
    return max(estimate_training_usage(params() * 4, "bfloat16").values())


def deepspeed_estimates() -> dict:
    import contextlib
    import io

    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs
    from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs

    largest = CFG["V"] * CFG["h"]
    with contextlib.redirect_stdout(io.StringIO()):
        z2_one = estimate_zero2_model_states_mem_needs(params(), 1, 1, cpu_offload=False)[1]
        z3_eight = estimate_zero3_model_states_mem_needs(params(), largest, 8, 1, cpu_offload=False,
                                                         cpu_offload_params=False, zero_init=True)[1]
    return {"zero2_1": z2_one, "zero3_8": z3_eight}


def torchtitan_style() -> dict:
    """PyTorch's FSDPMemTracker under FakeTensorMode with a fake process group on the same model, sharding,
    optimizer and device as the FSDP2 plan (``_fsdp_mem_tracker.py``)."""
    start = time.perf_counter()
    args = [str(CFG[k]) for k in ("h", "L", "a", "ffn", "V", "s", "b")] + ["8"]
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("_fsdp_mem_tracker.py")), *args],
                          capture_output=True, text=True, timeout=1800)
    out = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if line.startswith(("PEAK", "BREAKDOWN",
                                                                                             "FWBW_PEAK")))
    if "PEAK" not in out:
        raise SystemExit("FSDPMemTracker estimate failed: " + proc.stderr[-3000:])
    return {"peak": int(out["PEAK"]), "breakdown": json.loads(out["BREAKDOWN"]), "fwbw": int(out["FWBW_PEAK"]),
            "wall": time.perf_counter() - start}


def main() -> None:
    quick = "--quick" in sys.argv
    n = params()
    print(f"Llama-style 7B: {n / 1e9:.2f} B parameters, s=2048, micro-batch 1, AdamW; device 60.97 GiB (Ascend910B3)")
    one, wall, rss = plan([])
    r = one["ranks"][0]
    print(f"(A) 1 NPU, bf16 autocast: plan peak {r['peak_allocated'] / GiB:.1f} GiB allocated / "
          f"{r['peak_reserved'] / GiB:.1f} GiB reserved, fits={one['fits']}; OOM at {r['oom_op']} {r['oom_site']}: "
          f"{r['oom']}")
    print(f"    plan cost: {wall:.0f} s wall, {rss / GiB:.2f} GiB peak RSS")
    an1 = analytic(1)
    print(f"    analytic: {an1['total'] / GiB:.1f} GiB (state {an1['state'] / GiB:.1f} + activations "
          f"{an1['activations'] / GiB:.1f}; {an1['total_with_scores'] / GiB:.1f} with stored attention scores)")
    rows = [("this tool (plan)", r["peak_reserved"], None)]
    if not quick:
        eight, wall8, rss8 = plan(["--parallel", "fsdp", "--init", "meta"], devices=8)
        r8 = eight["ranks"][0]
        an8 = analytic(8)
        ratio = r8["peak_allocated"] / an8["total"]
        print(f"(B) FSDP2 on 8 NPUs: plan peak {r8['peak_allocated'] / GiB:.1f} GiB allocated / "
              f"{r8['peak_reserved'] / GiB:.1f} GiB reserved per rank (ranks {eight['planned_ranks']}), "
              f"fits={eight['fits']}; step ~{eight['step_time_s']:.2f} s, MFU {r8['mfu'] * 100:.0f}%")
        print(f"    live at the peak (GiB): " + ", ".join(f"{k} {v / GiB:.2f}" for k, v in r8["live_at_peak"].items()))
        print(f"    analytic: {an8['total'] / GiB:.1f} GiB (state {an8['state'] / GiB:.1f} + activations "
              f"{an8['activations'] / GiB:.1f}); plan / analytic = {ratio:.3f} (|1 - ratio| = {abs(1 - ratio):.1%})")
        print(f"    plan cost: {wall8:.0f} s wall for 2 planned ranks, {rss8 / GiB:.2f} GiB peak RSS")
        rows.append(("this tool (plan), FSDP2 x8", r8["peak_reserved"], None))
    acc = accelerate_estimate()
    ds = deepspeed_estimates()
    titan = torchtitan_style() if not quick else None
    print("comparison (GiB per NPU):")
    print(f"  accelerate estimate-memory (training, bf16): {acc / GiB:.1f} (parameters x4, no activations)")
    print(f"  DeepSpeed ZeRO-2 estimator, 1 GPU: {ds['zero2_1'] / GiB:.1f}; ZeRO-3, 8 GPUs: {ds['zero3_8'] / GiB:.1f} "
          "(model states only)")
    if titan:
        print(f"  torchtitan-style FakeTensor + FSDPMemTracker, FSDP2 x8 ({titan['wall']:.0f} s): tracker peak "
              f"{titan['peak'] / GiB:.1f} (" + ", ".join(f"{k} {v / GiB:.1f}" for k, v in titan["breakdown"].items()
                                                      if k != "Total") + ")")
        print(f"    its peak over the second iteration's forward and backward: {titan['fwbw'] / GiB:.1f}"
              + (f"; plan / tracker = {r8['peak_allocated'] / titan['fwbw']:.3f}" if not quick else ""))
    print(f"  analytic: 1 NPU {an1['total'] / GiB:.1f}; FSDP2 x8 {analytic(8)['total'] / GiB:.1f}")


if __name__ == "__main__":
    main()
