"""Benchmark the cost of ``ascend_compat.accuracy.compare`` on a training step.

Usage: python benchmarks/bench_compare.py [--steps N]
Prints, for a small MLP AdamW step on the simulated NPU, the time per step without the comparison and
with it (every op's inputs copied to the host, the op run there too, each floating output compared),
with ``sample=1`` and ``sample=10``.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _mlp_step import mlp_step, per_call  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()

    from ascend_compat.accuracy import compare

    step = mlp_step()

    def timed(fn) -> float:
        return per_call(fn, args.steps)

    timed(step)  # warm both paths once before measuring either
    plain = timed(step)
    print(f"training step without comparison: {plain * 1e3:8.2f} ms")
    for sample in (1, 10):
        with compare(sample=sample) as comparison:
            mirrored = timed(step)
        per_op = (mirrored - plain) / max(comparison.compared / (args.steps + 1), 1)
        print(f"with compare(sample={sample}):{' ' * (3 - len(str(sample)))}   {mirrored * 1e3:8.2f} ms  "
              f"({mirrored / plain:.1f}x; {comparison.compared // (args.steps + 1)} ops compared per step, "
              f"{per_op * 1e6:.0f} us each)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
