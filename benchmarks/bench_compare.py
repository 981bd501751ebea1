"""Benchmark the cost of ``ascend_compat.accuracy.compare`` and of recording a run for the drift comparison.

Usage: python benchmarks/bench_compare.py [--steps N] [--widths 256,1024]

For a small MLP AdamW step on the simulated NPU (one thread), per width: the time per step without any
tool; with every op compared (``sample=1``: inputs copied to the host, the op run there in the NPU's
dtypes, each output checked for equality) and with ``sample=10``; with every op compared while an
injected fault makes ``aten::gelu`` and its backward differ, so those two are judged against their
float64 golden (the path every op takes on real hardware, where results differ in the last bits); and
while recording the run for ``--against`` / ``--drift`` (module and gradient sketches, with and without
the op-level sketches). Each line prints the time, its ratio to the plain step and what it did; compare
two widths to see how the cost grows with the tensors' size.
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
    ap.add_argument("--widths", default="256,1024", help="MLP widths to measure, comma-separated")
    args = ap.parse_args()

    from ascend_compat.accuracy import compare
    from ascend_compat.accuracy.recorder import RunRecorder
    from ascend_compat.simulator import faults

    for width in (int(w) for w in args.widths.split(",")):
        step = mlp_step(width)

        def timed(fn=step) -> float:
            return per_call(fn, args.steps)

        timed()  # warm both paths once before measuring either
        plain = timed()
        print(f"width {width}: training step without a tool:   {plain * 1e3:8.2f} ms")

        def line(label: str, seconds: float, what: str) -> None:
            print(f"  {label:<38} {seconds * 1e3:8.2f} ms  ({seconds / plain:.1f}x; {what})")

        for sample in (1, 10):
            with compare(sample=sample) as c:
                t = timed()
            line(f"compare(sample={sample})", t, f"{c.compared // (args.steps + 1)} op calls compared per step")
        with faults.inject("aten::gelu", "scale", 1.0001), faults.inject("aten::gelu_backward", "scale", 1.0001), \
                compare() as c:
            t = timed()
        line("compare, gelu judged against float64", t,
             f"{len(c.departures) // (args.steps + 1)} departures per step")
        for ops in (False, True):
            with RunRecorder(ops=ops) as rec:
                t = timed()
            first = rec.record.to_dict()["steps"][0]
            sketches = 2 * len(first["modules"]) + len(first["ops"]) + len(first["grads"])
            line(f"recording the run{' with op values' if ops else ''}", t,
                 f"{sketches} tensor sketches in the first step" + (", ops in the first step only" if ops else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
