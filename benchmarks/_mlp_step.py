"""The training step the tool-overhead benchmarks measure (``bench_profile.py``, ``bench_compare.py``):
a small MLP AdamW step on the simulated NPU, one torch thread, and a timer over repeated calls (which
``bench_watch.py`` uses too)."""
from __future__ import annotations

import time
import warnings
from typing import Callable


def mlp_step(width: int = 256) -> Callable[[], None]:
    """Install the simulated NPU (one thread) and return a function running one training step of an MLP
    ``width`` wide (hidden layer ``2 * width``)."""
    import torch

    from ascend_compat import simulator

    simulator.install()
    torch.set_num_threads(1)  # as bench_simulator.py: one thread, comparable between runs
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(width, 2 * width), torch.nn.GELU(), torch.nn.LayerNorm(2 * width),
                                torch.nn.Linear(2 * width, 10)).to("npu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(64, width, device="npu")
    y = torch.randint(0, 10, (64,), device="npu")

    def step() -> None:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()

    return step


def per_call(fn: Callable[[], None], calls: int) -> float:
    """Seconds per call of ``fn`` over ``calls`` calls, after one warm-up call."""
    fn()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls
