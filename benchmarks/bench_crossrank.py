"""Benchmark ``ascend-compat error --log DIR`` (the cross-rank diagnosis): throughput and peak memory.

Usage: python benchmarks/bench_crossrank.py [--ranks 8] [--mb 8 32] [--keep]

For each ``--mb`` value, writes a job of ``--ranks`` ranks on 2 nodes where every rank has a plog of
that many MB (plog INFO noise, a few warnings) and a torchrun stderr of a tenth of it (step lines),
with one rank failing with 507015 and the others timing out (EI0002) at the end, then runs
``ascend-compat error --log`` on it in a child process and prints MB/s and the child's peak RSS.
Target: memory that does not grow with the logs' size (compare the --mb values), and the right root.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from ascend_compat.errors import hccl_text, plog  # noqa: E402


def write_job(root: str, ranks: int, megabytes: float) -> int:
    t0 = time.time() - 3600
    total = 0
    for rank in range(ranks):
        node = f"node{rank * 2 // ranks}"
        pid = 10_000 + rank
        w = plog.PlogWriter(os.path.join(root, node, "process_log"), pid=pid, pname="python3")
        w.write("INFO", "HCCL", "topoinfo_detect.cc:221", "[1]" + hccl_text.setup_line(
            ranks, rank, "id", f"{node}%eth0", rank % (ranks // 2), rank % (ranks // 2), "0.0.0.0"), run=True, when=t0)
        w.write("INFO", "HCCL", "externalinput.cc:383", "[1]HCCL_EXEC_TIMEOUT set by environment variable to [600]s",
                run=True, when=t0)
        noise = plog.format_line("INFO", "ASCENDCL", pid, "python3", t0, "model.cpp:321",
                                 "12345 aclmdlExecute: step ok, stream 3, task 77") + "\n"
        warn = plog.format_line("WARNING", "RUNTIME", pid, "python3", t0, "stream.cc:88",
                                "1 memory reuse slower than expected") + "\n"
        block = (noise * 99 + warn) * 50
        path = w.path("debug")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            while fh.tell() < megabytes * 1e6:
                fh.write(block)
        if rank == ranks - 1:
            w.write("ERROR", "RUNTIME", "log_inner.cpp:161",
                    "1 ReportCallError:synchronize stream failed, runtime result = 507015", when=t0 + 3000)
        else:
            for line in hccl_text.task_exception_lines(2, 9, "AllReduce_id", 3, "id", ranks, rank, "unknown"):
                w.write("ERROR", "HCCL", "task_exception_handler.cc:452", "[1]" + line, when=t0 + 3600)
        w.close()
        stderr = os.path.join(root, node, "torchrun", "run", "attempt_0", str(rank % (ranks // 2)), "stderr.log")
        os.makedirs(os.path.dirname(stderr), exist_ok=True)
        with open(stderr, "w", encoding="utf-8") as fh:
            line = f"[rank{rank}]: step 1 loss 2.31 lr 3e-4 grad_norm 0.8 tokens/s 51234\n"
            fh.write(line * int(megabytes * 1e5 / len(line)))
        total += os.path.getsize(path) + os.path.getsize(stderr)
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--mb", type=float, nargs="+", default=[8, 32])
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    for mb in args.mb:
        root = tempfile.mkdtemp(prefix="bench_crossrank_")
        size = write_job(root, args.ranks, mb)
        cmd = [sys.executable, "-c",
               "import resource, sys, json\n"
               "from ascend_compat.cli import main\n"
               "code = main(['error', '--log', sys.argv[1], '--format', 'json', '--no-progress'])\n"
               "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n", root]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        job = json.loads(proc.stdout)["job"]
        rss_mb = int(proc.stderr.strip().splitlines()[-1]) / 1024
        root_rank = job["root_cause"]["rank"] if job["root_cause"] else None
        print(f"{args.ranks} ranks x {mb:g} MB plog: {size / 1e6:.0f} MB in {wall:.1f} s = {size / 1e6 / wall:.0f} MB/s, "
              f"peak RSS {rss_mb:.0f} MB, root rank {root_rank} (expected {args.ranks - 1}), "
              f"{len(job['consequences'])} consequences")
        if args.keep:
            print("kept", root)
        else:
            import shutil

            shutil.rmtree(root)


if __name__ == "__main__":
    main()
