"""Benchmark the cost of ``ascend_compat.perf.profile`` on a training step.

Usage: python benchmarks/bench_profile.py [--steps N]
Prints, for a small MLP AdamW step on the simulated NPU, the time per step without the recorder and
with it (every op routed, its user frame and module found, FLOPs counted), and their ratio; then the
time ``report()`` takes to turn the recorded steps into findings.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _mlp_step import mlp_step, per_call  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()

    from ascend_compat.perf import profile

    step = mlp_step()

    def timed(fn) -> float:
        return per_call(fn, args.steps)

    timed(step)  # warm both paths once before measuring either
    plain = timed(step)
    with profile() as prof:
        def recorded():
            step()
            prof.step()
        profiled = timed(recorded)
    start = time.perf_counter()
    report = prof.report()
    analysis = time.perf_counter() - start
    ops = report.ops_per_step
    print(f"training step without recorder: {plain * 1e3:8.2f} ms")
    print(f"training step with recorder:    {profiled * 1e3:8.2f} ms  ({profiled / plain:.2f}x, "
          f"{(profiled - plain) / max(ops, 1) * 1e6:.1f} us per recorded op, {ops:.0f} ops/step)")
    print(f"report() over {len(report.record.steps)} steps: {analysis * 1e3:8.2f} ms, "
          f"{len(report.findings)} finding(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
