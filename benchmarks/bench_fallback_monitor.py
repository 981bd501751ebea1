"""Benchmark the cost of observing fallbacks and of auditing a model.

Usage: python benchmarks/bench_fallback_monitor.py [--steps N]
Prints, for a small MLP training step on the simulated NPU: time per step without a monitor, with
``FallbackMonitor`` (simulator events) and with ``FallbackMonitor(method="dispatch")`` (the
TorchDispatchMode used on real torch_npu); then the time of ``audit_model`` (forward + backward)
on a tiny Llama built from a config, against the plain forward + backward on the CPU.
"""
from __future__ import annotations

import argparse
import time
import warnings


def _per_step(fn, steps: int) -> float:
    fn()  # warm-up (plans, caches)
    start = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - start) / steps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()

    import torch

    from ascend_compat import simulator
    from ascend_compat.doctor import FallbackMonitor, audit_model

    simulator.install()
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.LayerNorm(512),
                                torch.nn.Linear(512, 10)).to("npu")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256).to("npu")

    def step():
        opt.zero_grad()
        model(x).logsumexp(1).mean().backward()
        opt.step()

    base = _per_step(step, args.steps)
    print(f"training step, no monitor:          {base * 1e3:8.2f} ms")
    for method in ("events", "dispatch"):
        with FallbackMonitor(method=method):
            t = _per_step(step, args.steps)
        print(f"training step, monitor {method:9s}: {t * 1e3:8.2f} ms  ({t / base:.2f}x)")

    try:
        import transformers
    except ImportError:
        print("transformers not installed: audit benchmark skipped")
        return 0
    cfg = transformers.LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    llama = transformers.LlamaForCausalLM(cfg)
    ids = {"input_ids": torch.randint(0, 256, (2, 32))}

    def plain():
        llama(**ids).logits.sum().backward()

    t_plain = _per_step(plain, 5)
    start = time.perf_counter()
    report = audit_model(llama, ids, backward=True)
    t_audit = time.perf_counter() - start
    print(f"tiny Llama fwd+bwd on CPU:          {t_plain * 1e3:8.2f} ms")
    print(f"audit_model(backward=True):         {t_audit * 1e3:8.2f} ms  ({t_audit / t_plain:.1f}x, first call "
          f"includes routing every op once)  -> {report.summary()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
