"""Measure check and migrate at their bounds: time and peak memory as the input grows.

Usage: python benchmarks/bench_analysis_limits.py [--sizes 1,9,50] [--migrate-sizes 1,4] [--quick]

* check on files of N MB of real CUDA training code (this repository's test scripts and examples
  repeated: every line a candidate, the densest case): wall time, MB/s, peak RSS of the check process
  (measured by its parent) and peak RSS per MB of input (the bound docs/check_and_migrate.md states);
* migrate (dry run) on files of N MB of the same code: wall time and peak RSS;
* migrate just under limits.MAX_NESTING for each kind of nesting (the slowest statement libcst is
  given) and check at CPython's own depth limit; migrate on statements summing to just under
  limits.MAX_WORK: CPU time and peak RSS of each.

Each run is a fresh process. Numbers depend on the machine and its load: compare ratios.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_MEASURE = textwrap.dedent("""
    import resource, subprocess, sys
    proc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(proc.returncode, use.ru_maxrss, use.ru_utime + use.ru_stime)
""")


def _run(cmd):
    """(exit status, CPU seconds, peak RSS in MB) of ``cmd`` in a fresh process (CPU time, not wall
    time: the measure a machine shared with other jobs does not distort)."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], capture_output=True, text=True, check=True).stdout
    code, kb, cpu = out.split()
    return int(code), float(cpu), int(kb) / 1024


def _cuda_file(directory: str, megabytes: float) -> str:
    sources = sorted((REPO / "tests" / "scripts").glob("*.py")) + sorted((REPO / "examples").glob("*.py"))
    unit = "".join(p.read_text(encoding="utf-8") + "\n" for p in sources)
    path = os.path.join(directory, f"cuda_{megabytes:g}mb.py")
    with open(path, "w", encoding="utf-8") as fh:
        for _ in range(max(1, int(megabytes * (1 << 20)) // len(unit))):
            fh.write(unit)
    return path


def bench_check(directory: str, sizes) -> None:
    print("check --format json on N MB of CUDA training code (every line a candidate); CPU time, peak RSS")
    tiny = os.path.join(directory, "tiny.py")
    Path(tiny).write_text("import torch\nx = torch.zeros(1).cuda()\n")
    _, _, base = _run([sys.executable, "-m", "ascend_compat", "check", "--format", "json", tiny])
    print(f"  a 2-line file: peak RSS {base:.0f} MB (the interpreter and ascend-compat)")
    for mb in sizes:
        path = _cuda_file(directory, mb)
        real = os.path.getsize(path) / (1 << 20)
        code, secs, rss = _run([sys.executable, "-m", "ascend_compat", "check", "--max-file-size", "200",
                                "--format", "json", path])
        print(f"  {real:6.1f} MB: exit {code}  {secs:7.1f} cpu-s  {real / secs:5.2f} MB/cpu-s  peak RSS {rss:6.0f} MB "
              f"= base + {(rss - base) / real:5.1f} x the file")


def bench_migrate(directory: str, sizes) -> None:
    print("migrate (dry run) on N MB of the same code")
    for mb in sizes:
        path = _cuda_file(directory, mb)
        real = os.path.getsize(path) / (1 << 20)
        code, secs, rss = _run([sys.executable, "-m", "ascend_compat", "migrate", "-q", path])
        print(f"  {real:6.1f} MB: exit {code}  {secs:7.1f} cpu-s  {real / secs:5.2f} MB/cpu-s  peak RSS {rss:6.0f} MB")


def bench_nesting(directory: str) -> None:
    sys.path.insert(0, str(REPO / "tests" / "analysis"))
    sys.path.insert(0, str(REPO / "tests"))
    from test_limits import CONSTRUCTS, _largest, _largest_accepted, source

    from ascend_compat.analysis import limits

    print(f"migrate just under MAX_NESTING={limits.MAX_NESTING}; check at CPython's depth limit")
    for kind in sorted(CONSTRUCTS):
        if kind == "blocks":
            under = 99
        elif kind == "parens":
            under = 199
        else:
            under = _largest(lambda n: limits.measure(source(kind, n)).nesting <= limits.MAX_NESTING,
                             2 * limits.MAX_NESTING)
        top = _largest_accepted(kind)
        m_path = os.path.join(directory, f"{kind}_m.py")
        Path(m_path).write_text(source(kind, under))
        c_path = os.path.join(directory, f"{kind}_c.py")
        Path(c_path).write_text(source(kind, top))
        _, m_secs, m_rss = _run([sys.executable, "-m", "ascend_compat", "migrate", "-q", m_path])
        _, c_secs, c_rss = _run([sys.executable, "-m", "ascend_compat", "check", "--format", "json", c_path])
        print(f"  {kind:9} migrate n={under:5d} {m_secs:5.1f} cpu-s {m_rss:5.0f} MB | check n={top:5d} "
              f"{c_secs:5.1f} cpu-s {c_rss:5.0f} MB")


def bench_work(directory: str) -> None:
    """migrate on a file whose statements sum to just under limits.MAX_WORK: the slowest file of
    deeply nested statements it still rewrites."""
    from ascend_compat.analysis import limits

    stmt = "y = " + " + ".join(["x.cuda()"] + ["a"] * 900) + "\n"
    n = limits.MAX_WORK // limits.measure(stmt).work
    path = os.path.join(directory, "work.py")
    Path(path).write_text("import torch\n" + stmt * n)
    code, secs, rss = _run([sys.executable, "-m", "ascend_compat", "migrate", "-q", path])
    print(f"migrate on {n} statements nested 900 deep (work just under MAX_WORK={limits.MAX_WORK:.0e}): "
          f"exit {code}  {secs:.1f} cpu-s  peak RSS {rss:.0f} MB")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--sizes", default="1,9,50", help="check file sizes in MB (default 1,9,50)")
    ap.add_argument("--migrate-sizes", default="1,4", help="migrate file sizes in MB (default 1,4)")
    ap.add_argument("--quick", action="store_true", help="sizes 1,9 and 1 only, no nesting sweep")
    a = ap.parse_args()
    sizes = [float(x) for x in ("1,9" if a.quick else a.sizes).split(",")]
    msizes = [float(x) for x in ("1" if a.quick else a.migrate_sizes).split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        bench_check(tmp, sizes)
        bench_migrate(tmp, msizes)
        if not a.quick:
            bench_nesting(tmp)
            bench_work(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
