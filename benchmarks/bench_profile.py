"""Benchmark the cost of ``ascend_compat.perf.profile`` on a training step.

Usage: python benchmarks/bench_profile.py [--steps N]
Prints, for a small MLP AdamW step on the simulated NPU, the time per step without the recorder and
with it (every op routed, its user frame and module found, FLOPs counted), and their ratio; then the
time ``report()`` takes to turn the recorded steps into findings.
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
    from ascend_compat.perf import profile

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
