"""Benchmark of the runtime shim on the simulated NPU; prints measured numbers (no pass/fail).

1. Translated call: ``torch.randn(64, device="cuda")`` (shim) against ``torch.randn(64, device="npu")``
   (native); also the pure wrapper cost on calls with no device argument, measured against the
   same call with the shim deactivated.
2. A small-op-heavy training step (deep narrow MLP, SGD) written CUDA-style and run with the shim,
   against the same step written natively for npu with the shim deactivated.
3. ``import ascend_compat`` on top of ``import torch``: without any backend (a CUDA/CPU machine), and
   the activation itself (patching) once the backend is installed.

Targets: <= 1 us added per translated call, nothing measurable on device-less calls,
<= 2% per training step, <= 30 ms import cost. Run: ``python benchmarks/bench_shim.py [--quick]``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import textwrap
import time
import timeit


def _per_call_us(stmt, number: int, repeat: int) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e6


def bench_calls(number: int, repeat: int) -> None:
    import torch

    import ascend_compat

    x = torch.ones(8)
    cases = {
        "randn_cuda": lambda: torch.randn(64, device="cuda"),
        "randn_npu": lambda: torch.randn(64, device="npu"),
        "device_cuda": lambda: torch.device("cuda:0"),
        "device_npu": lambda: torch.device("npu:0"),
        "randn_plain": lambda: torch.randn(64),
        "to_dtype": lambda: x.to(torch.float16),
    }
    shim: dict = {k: [] for k in cases}
    native: dict = {k: [] for k in cases}
    for _ in range(repeat):  # interleave shim / native rounds so both see the same machine noise
        ascend_compat.activate("simulator")
        for k, f in cases.items():
            if k != "randn_npu" and k != "device_npu":
                shim[k].append(_per_call_us(f, number, 1))
        ascend_compat.deactivate()
        for k, f in cases.items():
            if k != "randn_cuda" and k != "device_cuda":
                native[k].append(_per_call_us(f, number, 1))
    # the translation machinery alone, around a no-op "original": exact added cost per call
    from ascend_compat.cuda_shim.patches._common import device_kwarg

    ascend_compat.activate("simulator")

    def noop(*args, **kwargs):
        return None

    wrapped_noop = device_kwarg("bench")(noop)
    t_wrapped = _per_call_us(lambda: wrapped_noop(64, device="cuda"), number * 20, repeat)
    t_plain = _per_call_us(lambda: noop(64, device="npu"), number * 20, repeat)
    t_nodev = _per_call_us(lambda: wrapped_noop(64), number * 20, repeat)
    t_nodev_plain = _per_call_us(lambda: noop(64), number * 20, repeat)
    ascend_compat.deactivate()
    ascend_compat.activate("simulator")  # pure wrapper cost: same backend state, back to back
    wrapped, original = torch.randn, torch.randn.__wrapped__
    pairs = [(_per_call_us(lambda: wrapped(64, device="cuda"), number, 1),
              _per_call_us(lambda: original(64, device="npu"), number, 1)) for _ in range(repeat)]
    ascend_compat.deactivate()
    best = {k: min(v) for k, v in shim.items() if v}
    nat = {k: min(v) for k, v in native.items() if v}
    print("== per call (min over interleaved rounds)")
    print(f"torch.randn(64, device='cuda') shim   : {best['randn_cuda']:8.2f} us")
    print(f"torch.randn(64, device='npu') native  : {nat['randn_npu']:8.2f} us   "
          f"-> translation adds {best['randn_cuda'] - nat['randn_npu']:+.2f} us")
    print(f"translation wrapper around a no-op    : {t_wrapped:8.2f} / {t_plain:.2f} us -> adds "
          f"{t_wrapped - t_plain:+.2f} us per translated call; {t_nodev - t_nodev_plain:+.2f} us with no device")
    w, o = min(p[0] for p in pairs), min(p[1] for p in pairs)
    print(f"same, wrapper vs unwrapped original   : {w:8.2f} / {o:.2f} us -> wrapper adds {w - o:+.2f} us")
    print(f"torch.device('cuda:0') shim           : {best['device_cuda']:8.2f} us   vs native torch.device('npu:0') "
          f"{nat['device_npu']:.2f} us -> {best['device_cuda'] - nat['device_npu']:+.2f} us")
    print(f"torch.randn(64), no device, shim/nat. : {best['randn_plain']:8.2f} / {nat['randn_plain']:.2f} us -> "
          f"{best['randn_plain'] - nat['randn_plain']:+.2f} us")
    print(f"Tensor.to(float16), shim/native       : {best['to_dtype']:8.2f} / {nat['to_dtype']:.2f} us -> "
          f"{best['to_dtype'] - nat['to_dtype']:+.2f} us")


def bench_training(steps: int, rounds: int) -> None:
    import torch

    import ascend_compat

    def make(device):
        torch.manual_seed(0)
        layers = []
        for _ in range(12):
            layers += [torch.nn.Linear(32, 32), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, foreach=False)
        return model, opt

    def run(device, cuda_style: bool) -> float:
        model, opt = make(device)
        x = torch.randn(16, 32)
        y = torch.randn(16, 32)
        t0 = time.perf_counter()
        for _ in range(steps):
            if cuda_style:
                xb, yb = x.cuda(), y.to("cuda")
            else:
                xb, yb = x.to("npu"), y.to("npu")
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
        loss.item()
        return (time.perf_counter() - t0) / steps * 1e3

    shim_ms, native_ms = [], []
    for i in range(rounds):  # interleave (alternating which goes first) to share machine noise
        for which in ((0, 1) if i % 2 == 0 else (1, 0)):
            if which == 0:
                ascend_compat.activate("simulator")
                shim_ms.append(run(torch.device("cuda"), True))
                ascend_compat.deactivate()
            else:
                native_ms.append(run(torch.device("npu"), False))
    print("== small-op training step (12x Linear(32,32)+ReLU, SGD, 24 modules; interleaved rounds)")
    for label, agg in (("min", min), ("median", statistics.median)):
        s, n = agg(shim_ms), agg(native_ms)
        print(f"{label:>6}: CUDA-style script with shim {s:7.3f} ms/step, native npu script {n:7.3f} ms/step"
              f" -> {100 * (s - n) / n:+.2f}%")
    # deterministic complement to the noisy timing: how many Python calls the shim adds per step
    import cProfile
    import pstats

    def calls(device, cuda_style) -> int:
        prof = cProfile.Profile()
        prof.enable()
        run(device, cuda_style)
        prof.disable()
        return pstats.Stats(prof).total_calls

    ascend_compat.activate("simulator")
    c_shim = calls(torch.device("cuda"), True)
    ascend_compat.deactivate()
    c_native = calls(torch.device("npu"), False)
    print(f"Python-level calls per step: shim {c_shim / steps:.0f}, native {c_native / steps:.0f} "
          f"(+{(c_shim - c_native) / steps:.0f} calls, each well under 1 us)")
    paired = [100 * (s - n) / n for s, n in zip(shim_ms, native_ms)]
    print(f"median of paired round ratios: {statistics.median(paired):+.2f}% "
          f"(spread {min(paired):+.1f}% .. {max(paired):+.1f}%: machine noise)")


def bench_import(repeat: int) -> None:
    code = textwrap.dedent("""
        import time, torch
        t0 = time.perf_counter()
        import ascend_compat
        t1 = time.perf_counter()
        print((t1 - t0) * 1e3)
    """)
    act = textwrap.dedent("""
        import time, torch
        from ascend_compat import simulator
        simulator.install()
        import ascend_compat
        t0 = time.perf_counter()
        ascend_compat.activate("simulator")
        t1 = time.perf_counter()
        print((t1 - t0) * 1e3)
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_COMPAT_")}

    def measure(src):
        vals = []
        for _ in range(repeat):
            out = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, env=env, check=True)
            vals.append(float(out.stdout.strip().splitlines()[-1]))
        return min(vals), statistics.median(vals)

    no_backend = measure(code)
    activation = measure(act)
    print("== import / activation cost on top of `import torch` (fresh interpreters)")
    print(f"import ascend_compat, no NPU backend : min {no_backend[0]:6.1f} ms, median {no_backend[1]:6.1f} ms")
    print(f"activate() with the simulator present: min {activation[0]:6.1f} ms, median {activation[1]:6.1f} ms "
          "(the simulator's own install is not included)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations (noisier)")
    args = parser.parse_args()
    from ascend_compat import simulator

    simulator.install()
    q = args.quick
    bench_calls(number=500 if q else 3000, repeat=5 if q else 9)
    bench_training(steps=10 if q else 30, rounds=3 if q else 15)
    bench_import(repeat=3 if q else 7)


if __name__ == "__main__":
    main()
