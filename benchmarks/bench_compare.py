"""Benchmark the cost of ``ascend_compat.accuracy.compare`` on a training step.

Usage: python benchmarks/bench_compare.py [--steps N]
Prints, for a small MLP AdamW step on the simulated NPU, the time per step without the comparison and
with it (every op's inputs copied to the host, the op run there too, each floating output compared),
with ``sample=1`` and ``sample=10``.
"""
from __future__ import annotations

import argparse
import time
import warnings


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()

    import torch

    from ascend_compat import simulator
    from ascend_compat.accuracy import compare

    simulator.install()
    torch.set_num_threads(1)  # as bench_simulator.py: one thread, comparable between runs
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.LayerNorm(512),
                                torch.nn.Linear(512, 10)).to("npu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(64, 256, device="npu")
    y = torch.randint(0, 10, (64,), device="npu")

    def step():
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()

    def timed(fn) -> float:
        fn()
        start = time.perf_counter()
        for _ in range(args.steps):
            fn()
        return (time.perf_counter() - start) / args.steps

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
