"""Measure the simulated NPU's optional multi-device C++ guard: one-time build and cached load.

Usage: ``python benchmarks/bench_sim_guard.py``. Builds the guard into a fresh temporary
torch-extension directory (so the number is a real first build, not the user's cache), then
loads it from that cache in a new interpreter, and prints both times. Each step runs in its
own interpreter, as an install would.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

STEP = """
import json, time
import torch
from ascend_compat.simulator import _cext
t = time.perf_counter()
reason = _cext.ensure_built()
print(json.dumps({"reason": reason, "seconds": time.perf_counter() - t, "info": _cext.guard_info()}))
"""


def _step(env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", STEP], env=env, capture_output=True, text=True,
                         check=True, timeout=900).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    import torch

    with tempfile.TemporaryDirectory(prefix="ascend_compat_guard_bench_") as root:
        env = dict(os.environ, TORCH_EXTENSIONS_DIR=root)
        first = _step(env)
        if first["reason"]:
            print(f"guard unavailable: {first['reason']}")
            return 1
        cached = _step(env)
    print(f"torch {torch.__version__}, python {sys.version.split()[0]}, {os.cpu_count()} cpu(s)")
    print(f"first build (compile + link + import): {first['info']['built_seconds']:.1f} s")
    print(f"cached load in a new process (after import torch): {cached['seconds'] * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
