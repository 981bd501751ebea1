"""Benchmark ``ascend-compat check`` (and ``migrate --dry-run``) on a large real tree.

Usage: python benchmarks/bench_analysis.py [TREE] [--jobs N] [--migrate-files N]
TREE defaults to the installed torch package (its .py files, found without importing torch).
Prints wall-clock lines/s and CPU-time-based lines/s (the latter is what the given number of idle
cores would deliver; on a machine shared with other jobs the wall-clock number is lower) for: check cold (no cache), check with a cache being filled, check warm (cache hit),
and migrate (dry run) on a sample of the files that have findings.

First it prints check's single-process CPU time as a ratio to CPython's own ``ast.parse`` of the
same files (read and decoded the same way) in the same run: the parser is the floor check builds on.
check runs twice there: file by file, and with its default project-wide resolution (a second pass over
the files other modules' facts reach), so the cost of that resolution shows.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import sys
import tempfile
import time


def _torch_dir() -> str:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed; pass a TREE to benchmark")
    return list(spec.submodule_search_locations)[0]


def parse_vs_check(targets) -> float:
    """check's single-process time on ``targets`` divided by ``ast.parse`` time on the same files."""
    import ast
    import warnings

    from ascend_compat.analysis.scan import ScanOptions, scan_targets

    texts = []
    for t in targets:
        with open(t.path, "rb") as fh:
            texts.append(fh.read().decode("utf-8", "replace"))
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for text in texts:
            try:
                ast.parse(text)
            except SyntaxError:
                pass
    parse = time.process_time() - t0
    t0 = time.process_time()
    alone = scan_targets(targets, ScanOptions(project=False), jobs=1)
    file_by_file = time.process_time() - t0
    t0 = time.process_time()
    together = scan_targets(targets, ScanOptions(), jobs=1)
    check = time.process_time() - t0
    ratio = check / parse
    n_alone, n_together = (sum(len(r.findings) for r in x) for x in (alone, together))
    print(f"ast.parse {parse:6.2f} cpu-s | check file by file {file_by_file:6.2f} cpu-s ({n_alone:,} findings) | "
          f"check with project-wide resolution (the default) {check:6.2f} cpu-s ({n_together:,} findings)\n"
          f"ratio check/ast.parse = {ratio:.2f} (file by file {file_by_file / parse:.2f})")
    return ratio


def main() -> int:
    from ascend_compat.analysis.discover import discover
    from ascend_compat.analysis.scan import ScanOptions, scan_targets

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree", nargs="?")
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--migrate-files", type=int, default=60)
    a = ap.parse_args()
    tree = a.tree or _torch_dir()
    targets, _ = discover([tree], use_gitignore=False)
    targets = [t for t in targets if t.kind == "python"]
    lines = 0
    for t in targets:
        with open(t.path, "rb") as fh:
            lines += fh.read().count(b"\n")
    print(f"tree: {tree}\nfiles: {len(targets)}  lines: {lines:,}  jobs: {a.jobs}  cpus: {os.cpu_count()}")

    def cpu():
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    def run(label, opts):
        c0, t0 = cpu(), time.perf_counter()
        res = scan_targets(targets, opts, jobs=a.jobs)
        dt, dc = time.perf_counter() - t0, cpu() - c0
        n = sum(len(r.findings) for r in res)
        errs = sum(1 for r in res if r.error)
        # lines per CPU-second x jobs = what `jobs` otherwise idle cores deliver (the machine may be shared)
        print(f"check {label:<14} wall {dt:6.2f} s {lines / dt:>10,.0f} lines/s | cpu {dc:6.2f} s "
              f"{lines / dc:>10,.0f} lines/cpu-s -> {a.jobs * lines / dc:>10,.0f} lines/s on {a.jobs} idle cores "
              f"({n:,} findings, {errs} file errors)")
        return res

    parse_vs_check(targets)
    res = run("cold", ScanOptions())
    cache = tempfile.mkdtemp(prefix="ac-bench-cache-")
    try:
        run("cache fill", ScanOptions(cache_dir=cache))
        run("warm (cache)", ScanOptions(cache_dir=cache))
    finally:
        shutil.rmtree(cache, ignore_errors=True)

    try:
        from ascend_compat.analysis.migrate import migrate_source
    except ImportError as exc:
        print(f"migrate: skipped ({exc})")
        return 0
    sample = [r.path for r in res if r.findings][: a.migrate_files]
    mlines = 0
    t0 = time.perf_counter()
    changed = 0
    for p in sample:
        with open(p, encoding="utf-8", errors="replace") as fh:
            src = fh.read()
        mlines += src.count("\n")
        try:
            out = migrate_source(src, p)
        except Exception:  # a benchmark reports, it does not stop
            continue
        changed += out.code != src
    dt = time.perf_counter() - t0
    if mlines:
        print(f"migrate dry-run   {dt:7.2f} s  {mlines / dt:>10,.0f} lines/s  "
              f"({len(sample)} files with findings, {changed} changed, 1 process)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
