"""Benchmark what watching a training step costs: profile's recorder, audit's observers, against a plain
step on the simulated NPU, for GPT-style models of growing size.

Usage: python benchmarks/bench_watch.py [--steps N] [--sizes small,medium,large]
For each size (layers x width x sequence) prints the time per training step (AdamW, hand-written
attention and tanh GELU as minGPT writes them) without a watcher and with: ``perf.profile`` (every NPU
op recorded with its line, module, phase and data flow), ``FallbackMonitor`` by the simulator's events
and by the dispatch mode, and the recorder's analysis (``report()``: every rule, the fused-op matching
included) over the recorded steps; then ``OpRecorder`` (audit on the CPU) against the same step on the
CPU. The ratios show what the tools cost and how the cost grows with the model: per recorded op, not per
FLOP, so large steps pay relatively less.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _mlp_step import per_call  # noqa: E402  (one timer for every tool-overhead benchmark)

SIZES = {"small": (2, 64, 32), "medium": (4, 128, 64), "large": (6, 256, 128)}


def _model(torch, layers: int, width: int, seq: int):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
            self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, 4, C // 4).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // 4))
            att = F.softmax(att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf")), dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))
            h = self.fc(self.ln2(x))
            h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
            return x + self.out(h)

    return nn.Sequential(nn.Embedding(128, width), *[Block() for _ in range(layers)], nn.Linear(width, 128))


def _step(torch, model, device: str, seq: int):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, 128, (8, seq), device=device)

    def step():
        logits = model(x)
        torch.nn.functional.cross_entropy(logits.flatten(0, 1), x.flatten()).backward()
        opt.step()
        opt.zero_grad()

    return step


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--sizes", default="small,medium,large")
    args = ap.parse_args()

    import torch

    from ascend_compat import simulator
    from ascend_compat.coverage.audit import OpRecorder
    from ascend_compat.coverage.fallback import FallbackMonitor
    from ascend_compat.perf import profile

    simulator.install()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    for size in args.sizes.split(","):
        layers, width, seq = SIZES[size]
        torch.manual_seed(0)
        model = _model(torch, layers, width, seq).to("npu")
        step = _step(torch, model, "npu", seq)
        plain = per_call(step, args.steps)
        with profile(start_phase="train") as prof:
            def recorded():
                step()
                prof.step()
            watched = per_call(recorded, args.steps)
        start = time.perf_counter()
        report = prof.report()
        analysis = time.perf_counter() - start
        ops = report.ops_per_step
        monitors = {}
        for method in ("events", "dispatch"):
            with FallbackMonitor(method=method):
                monitors[method] = per_call(step, args.steps)
        print(f"{size} ({layers} layers, width {width}, sequence {seq}; {ops:.0f} NPU ops/step):")
        print(f"  plain simulated step      {plain * 1e3:9.1f} ms")
        print(f"  profile recorder          {watched * 1e3:9.1f} ms  ({watched / plain:.2f}x, "
              f"{(watched - plain) / max(ops, 1) * 1e6:.0f} us per recorded op)")
        print(f"  report() over {len(report.record.steps)} steps      {analysis * 1e3:9.1f} ms  "
              f"({len(report.findings)} findings: {', '.join(sorted({f.rule for f in report.findings}))})")
        for method, t in monitors.items():
            print(f"  FallbackMonitor {method:9s} {t * 1e3:9.1f} ms  ({t / plain:.2f}x)")
        torch.manual_seed(0)
        cpu_model = _model(torch, layers, width, seq)
        cpu_step = _step(torch, cpu_model, "cpu", seq)
        cpu_plain = per_call(cpu_step, args.steps)
        with OpRecorder():
            cpu_audit = per_call(cpu_step, args.steps)
        print(f"  CPU step / under audit    {cpu_plain * 1e3:9.1f} ms / {cpu_audit * 1e3:.1f} ms  "
              f"({cpu_audit / cpu_plain:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
