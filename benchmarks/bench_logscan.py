"""Benchmark ``ascend-compat error --log``: throughput (MB/s) and peak memory on a generated log.

Usage: python benchmarks/bench_logscan.py [--mb 200] [--keep]

Writes a log of about ``--mb`` MB (training-step lines with CANN plog noise, a CPU-fallback
warning every 2,000 lines, an error code every 50,000 lines, NUL padding at the end as a crashed
process leaves it) to a temporary directory, then runs ``ascend-compat error --log`` on it in a
child process and prints wall-clock MB/s and the child's peak RSS. Target: >= 50 MB/s with memory
that does not grow with the log's size (compare two --mb values). Then, in this process, the
scanner alone on 20 MB logs in which every line matches something (the adversarial case).
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

LINES = (
    "[INFO] ASCENDCL(12345,python):2026-11-21-11:02:09.123.456 [model.cpp:321]12345 aclmdlExecute: step {i} ok\n",
    "step {i} loss 2.3419 lr 3.0e-04 grad_norm 0.8123 tokens/s 51234.5\n",
    "[W compiler_depend.ts:{i}] Warning: something minor happened on stream {i}\n",
)
FALLBACK = ("UserWarning: CAUTION: The operator 'aten::mode' is not currently supported on the NPU backend and "
            "will fall back to run on the CPU. This may have performance implications.\n")
ERROR = "[ERROR] RUNTIME(1,python) rtStreamSynchronize failed, error code is 507035\n"


def write_log(path: str, megabytes: float) -> int:
    target = int(megabytes * 1e6)
    written = 0
    i = 0
    with open(path, "w", encoding="utf-8") as fh:
        while written < target:
            chunk = []
            for _ in range(10_000):
                i += 1
                line = LINES[i % 3].format(i=i)
                if i % 2_000 == 0:
                    line = FALLBACK
                if i % 50_000 == 0:
                    line = ERROR
                chunk.append(line)
            text = "".join(chunk)
            fh.write(text)
            written += len(text)
    with open(path, "ab") as fh:
        fh.write(b"\x00" * 65536)
    return os.path.getsize(path)


DENSE = (
    ("HCCL + 'error code is 0' + notify",
     "[INFO] HCCL(1,python) hcclCommInitRank rank 3 of 8 error code is 0 notify {i}\n"),
    ("CPU-fallback warning", FALLBACK.rstrip("\n") + " {i}\n"),
    ("error code 507035", "[ERROR] RUNTIME rtStreamSynchronize failed, error code is 507035 step {i}\n"),
    ("EZ9999", "[ERROR] EZ9999: Inner Error! step {i}\n"),
)


def dense_cases() -> None:
    from ascend_compat.errors.logscan import LogScanner

    for name, line in DENSE:
        text = "".join(line.format(i=i) for i in range(250_000))
        best = 0.0
        for _ in range(3):
            t0 = time.perf_counter()
            LogScanner().feed(text)
            best = max(best, len(text) / 1e6 / (time.perf_counter() - t0))
        print(f"every line matches ({name}): {best:.0f} MB/s (best of 3, {len(text) / 1e6:.0f} MB)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200.0, help="log size in MB (default 200)")
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-logscan-")
    path = os.path.join(tmp, "train.log")
    size = write_log(path, args.mb)
    cmd = [sys.executable, "-m", "ascend_compat", "error", "--log", path, "--format", "json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        return 1
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"log: {size / 1e6:.1f} MB")
    print(f"error --log: {wall:.2f} s wall, {size / 1e6 / wall:.1f} MB/s wall "
          f"({size / 1e6 / cpu:.1f} MB/s per CPU second)")
    print(f"peak RSS of the child: {after.ru_maxrss / 1024:.0f} MB")
    print("target: >= 50 MB/s")
    dense_cases()
    if not args.keep:
        os.unlink(path)
        os.rmdir(tmp)
    else:
        print(f"kept {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
