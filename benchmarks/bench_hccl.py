"""Benchmark the simulated hccl backend's per-collective cost of HCCL's argument check (EI0005).

Usage: python benchmarks/bench_hccl.py [--rounds 3] [--calls 400]

Runs 2 ranks under torchrun, each timing ``dist.all_reduce`` of 1,024 float32 on npu, alternately with
the check (as shipped) and with it switched off in that run (``Communicator._check_arguments`` replaced
by a no-op), and prints the median microseconds per call of each and their ratio. The check is one
extra small gloo all-gather per collective.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

WORKER = r'''
import os, sys, time
import ascend_compat.simulator as sim
sim.install_from_env()
import torch, torch.distributed as dist
if sys.argv[1] == "off":
    from ascend_compat.simulator import _hccl_comm
    _hccl_comm.Communicator._check_arguments = lambda *a: None
torch.npu.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("hccl")
t = torch.ones(1024, device="npu")
for _ in range(20):
    dist.all_reduce(t)
n = int(sys.argv[2])
t0 = time.perf_counter()
for _ in range(n):
    dist.all_reduce(t)
if dist.get_rank() == 0:
    print("US", (time.perf_counter() - t0) / n * 1e6)
dist.destroy_process_group()
'''


def run(mode: str, calls: int, script: str, logs: str) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ASCEND_PROCESS_LOG_PATH": logs}
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
                          script, mode, str(calls)], env=env, capture_output=True, text=True, timeout=600).stdout
    return float(next(line.split()[1] for line in out.splitlines() if line.startswith("US")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=400)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "worker.py")
        with open(script, "w") as fh:
            fh.write(WORKER)
        times = {"on": [], "off": []}
        for _ in range(args.rounds):
            for mode in ("off", "on"):
                times[mode].append(run(mode, args.calls, script, os.path.join(tmp, "logs")))
    on, off = statistics.median(times["on"]), statistics.median(times["off"])
    print(f"all_reduce 4 KB, 2 ranks: {off:.0f} us without the argument check, {on:.0f} us with it "
          f"({on / off:.2f}x; runs: off {[round(t) for t in times['off']]}, on {[round(t) for t in times['on']]}); "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
