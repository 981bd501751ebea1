"""Simulated NPU vs CPU: per small op, a small-MLP AdamW step, a small-CNN step.

Run: ``python benchmarks/bench_simulator.py [--repeat N] [--autograd-threads caller|device] [--clock wall|cpu]``. Prints
measured numbers and the targets (<= 20 us per small op, <= 3x CPU on the MLP step, <= 1.5x CPU on the
CNN step with exact float32 on both sides (the same step with torch_npu's default HF32 convolutions
is printed beside it, without a target), allocations - ``empty``/``randn``/``zeros`` on the device, ``x.to(device)`` of a 16-element host
tensor - <= 2x a small device op). Single-threaded torch, best of several runs, so numbers are comparable across machines with
noisy neighbours. ``--autograd-threads device`` measures the simulator with npu backward on torch's
per-device worker threads (as torch_npu runs it) instead of the default calling thread.
"""
from __future__ import annotations

import argparse
import time

import torch
from torch import nn

from ascend_compat import simulator
from ascend_compat.simulator import numerics


_clock = time.perf_counter


def _best_pair(cpu_fn, npu_fn, number: int, repeat: int):
    """Best mean seconds per call of each function over ``repeat`` rounds of ``number`` calls.

    CPU and npu runs alternate, so a noisy neighbour slows both sides of a ratio alike.
    """
    cpu_fn()
    npu_fn()
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for i, fn in enumerate((cpu_fn, npu_fn)):
            t0 = _clock()
            for _ in range(number):
                fn()
            best[i] = min(best[i], (_clock() - t0) / number)
    return best


#: the allocation path, measured against a small device op ("add"): target <= 2x on the simulator
ALLOCATION = ("empty(16)", "randn(16)", "zeros(16)", "x.to(device)")


def _ops(device):
    a = torch.randn(16, device=device)
    b = torch.randn(16, device=device)
    m = torch.randn(4, 4, device=device)
    host = torch.randn(16)
    return {
        "add": lambda: a + b,
        "mul": lambda: a * b,
        "relu": lambda: torch.relu(a),
        "matmul 4x4": lambda: m @ m,
        "add_ (in place)": lambda: a.add_(b),
        "empty(16)": lambda: torch.empty(16, device=device),
        "randn(16)": lambda: torch.randn(16, device=device),
        "zeros(16)": lambda: torch.zeros(16, device=device),
        "x.to(device)": lambda: host.to(device),
    }


def _mlp_step(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 32, device=device), torch.randint(0, 10, (16,), device=device)

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def _cnn_step(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 3, 32, 32, device=device), torch.randint(0, 10, (16,), device=device)

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per measurement (best is kept)")
    parser.add_argument("--autograd-threads", choices=("caller", "device"), default="caller",
                        help="where npu backward runs (simulator.install(autograd_threads=...))")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall: elapsed time; cpu: this process's CPU time (robust when other processes "
                             "compete for the cores; torch runs single-threaded here)")
    args = parser.parse_args(argv)
    global _clock
    _clock = time.perf_counter if args.clock == "wall" else time.process_time
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    simulator.install(autograd_threads=args.autograd_threads)
    install_s = time.perf_counter() - t0
    print(f"torch {torch.__version__}, simulator install {install_s * 1e3:.0f} ms, 1 thread, best of {args.repeat}, "
          f"{args.clock} clock, "
          f"npu backward on the {args.autograd_threads} thread{'s' if args.autograd_threads == 'device' else ''}")
    print(f"{'measurement':<22}{'cpu':>12}{'npu (sim)':>12}{'ratio':>8}  target")
    cpu_ops, npu_ops = _ops("cpu"), _ops("npu")
    for name in cpu_ops:
        c, n = _best_pair(cpu_ops[name], npu_ops[name], 2000, args.repeat)
        target = "<= 20 us" if name in ("add", "mul", "relu", "matmul 4x4") else ""
        ok = "" if not target else ("ok" if n * 1e6 <= 20 else "MISSED")
        print(f"{name:<22}{c * 1e6:>9.1f} us{n * 1e6:>9.1f} us{n / c:>7.1f}x  {target} {ok}")
    # each allocation alternates with the npu add in short rounds, so a noisy neighbour slows both
    print(f"{'allocation / npu add':<22}{'add':>12}{'npu (sim)':>12}{'ratio':>8}  target")
    for name in ALLOCATION:
        a, n = _best_pair(npu_ops["add"], npu_ops[name], 500, 3 * args.repeat)
        ratio = n / a
        print(f"{name:<22}{a * 1e6:>9.1f} us{n * 1e6:>9.1f} us{ratio:>7.2f}x  <= 2x {'ok' if ratio <= 2 else 'MISSED'}")
    steps = (("MLP AdamW step", _mlp_step, 100, 3.0, True), ("CNN AdamW step", _cnn_step, 10, 1.5, False),
             ("CNN, HF32 conv", _cnn_step, 10, None, True))
    for name, make, number, limit, hf32 in steps:
        # the CPU computes exact float32; "CNN AdamW step" compares like with like (the simulated
        # NPU exact too), "CNN, HF32 conv" shows the cost of torch_npu's default HF32 convolutions
        (numerics.register if hf32 else numerics.disable)()
        c, n = _best_pair(make("cpu"), make("npu"), number, args.repeat)
        ok = "" if limit is None else f"<= {limit}x {'ok' if n / c <= limit else 'MISSED'}"
        print(f"{name:<22}{c * 1e3:>9.2f} ms{n * 1e3:>9.2f} ms{n / c:>7.2f}x  {ok}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
