#!/usr/bin/env python3
"""Generate ``src/ascend_compat/data/version_matrix.json``: published torch_npu / torch / CANN
combinations, Python versions per torch, and what PyPI knows about releases the matrix lacks.

Sources:
  * ``--pytorch-git DIR``: a git directory of Ascend/pytorch. From ``COMPATIBILITY.en.md`` at ``--ref``
    (default ``master``): the recommended combination, every row of the active and historical
    version tables, the PyTorch/Python table and the hardware list. From each release branch's
    ``README.en.md`` (when present): the gcc/glibc and C++ ABI build notes.
  * ``--pypi-dir DIR``: ``report_<version>.json`` files written by
    ``pip install --dry-run --no-deps --ignore-installed --report`` for each torch-npu version on
    PyPI (``--fetch-pypi`` writes them; that needs the package index): the torch pin
    (``Requires-Dist: torch==``) of every published wheel.
  * ``--torch DIR`` (repeatable): installed torch packages; their dist-info classifiers give the
    Python versions of torch releases newer than the compatibility table.

Rows are sorted newest torch_npu first. Usage:
  python tools/gen_version_matrix.py --pytorch-git DIR --pypi-dir DIR [--torch DIR ...] [--output PATH]
  python tools/gen_version_matrix.py --fetch-pypi DIR      # refresh the PyPI reports (network)
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sources import minor_key, version_tuple, write_json  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "src" / "ascend_compat" / "data" / "version_matrix.json"


def git_show(git_dir: Path, ref: str, path: str) -> Optional[str]:
    r = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{ref}:{path}"],
                       capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def git_rev(git_dir: Path, ref: str) -> str:
    r = subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", "--short=9", ref],
                       capture_output=True, text=True, check=True)
    return r.stdout.strip()


def md_tables(text: str) -> List[List[List[str]]]:
    """Every markdown pipe table in ``text`` as rows of cells (header first, separator dropped)."""
    tables: List[List[List[str]]] = []
    current: List[List[str]] = []
    for line in text.splitlines() + [""]:
        s = line.strip()
        if s.startswith("|"):
            cells = [c.strip() for c in s.strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells if c):
                current.append(cells)
        elif current:
            tables.append(current)
            current = []
    return tables


def norm_torch(v: str) -> str:
    """``torch==2.9.0+cpu`` / ``2.14.0.*`` / ``PyTorch 2.13.0`` -> ``2.9.0`` / ``2.14.0`` / ``2.13.0``."""
    m = re.search(r"(\d+\.\d+(?:\.\d+)?)", v)
    if not m:
        raise ValueError(f"no torch version in {v!r}")
    parts = m.group(1).split(".")
    return ".".join(parts + ["0"] * (3 - len(parts)))


def parse_compatibility(text: str) -> dict:
    rows, python, hardware, recommended = [], {}, [], {}
    for table in md_tables(text):
        header = [h.lower() for h in table[0]]
        body = table[1:]
        if header[:2] == ["component", "recommended version"]:
            for comp, val in body:
                recommended[comp.lower()] = val
        elif "gitcode branch" in header and "cann version" in header:
            i_npu = next(i for i, h in enumerate(header) if "torchnpu" in h or "torch_npu" in h)
            i_br, i_pt, i_cann = header.index("gitcode branch"), header.index("pytorch version"), header.index("cann version")
            for r in body:
                rows.append({
                    "torch_npu": r[i_npu].split()[0],
                    "beta": "(beta)" in r[i_npu],
                    "branch": r[i_br],
                    "torch": norm_torch(r[i_pt]),
                    "cann": re.sub(r"^CANN\s*", "", r[i_cann]),
                })
        elif header[:2] == ["pytorch version", "python version"]:
            for pt, py in body:
                python[minor_key(norm_torch(pt))] = sorted({m for m in re.findall(r"3\.\d+", py)}, key=version_tuple)
        elif header == ["product range"]:
            hardware = [r[0] for r in body]
    # the branch table inside <details> ("historical version (including EOL)") holds the EOL rows
    hist_at = text.find("<details>")
    hist_branches = set()
    if hist_at >= 0:
        for table in md_tables(text[hist_at:]):
            header = [h.lower() for h in table[0]]
            if "gitcode branch" in header:
                hist_branches.update(r[header.index("gitcode branch")] for r in table[1:])
    for r in rows:
        r["status"] = "historical" if r["branch"] in hist_branches else "active"
    return {"rows": rows, "python": python, "hardware": hardware, "recommended": recommended}


def build_notes(readme: str) -> dict:
    out = {}
    m = re.search(r"gcc ([\d.]+) for ARM and gcc ([\d.]+) for X86", readme)
    if m:
        out["gcc_arm"], out["gcc_x86"] = m.group(1), m.group(2)
    m = re.search(r"new C\+\+ ABI.*?glibc ([\d.]+), gcc ([\d.]+)", readme, flags=re.S)
    if m:
        out["cxx11_abi_glibc"], out["cxx11_abi_gcc"] = m.group(1), m.group(2)
    m = re.search(r"_ABI_VERSION=(\d+)", readme)
    if m:
        out["fabi_version"] = int(m.group(1))
    return out


def read_pypi(pypi_dir: Path) -> Dict[str, dict]:
    out: Dict[str, dict] = {}
    for f in sorted(pypi_dir.glob("report_*.json")):
        report = json.loads(f.read_text(encoding="utf-8"))
        for item in report.get("install", []):
            meta = item.get("metadata", {})
            if meta.get("name", "").lower().replace("_", "-") != "torch-npu":
                continue
            pins = [d for d in meta.get("requires_dist") or [] if re.match(r"^torch\s*==", d)]
            out[meta["version"]] = {
                "torch": norm_torch(pins[0].split("==", 1)[1]) if pins else None,
                "torch_pin": pins[0].replace(" ", "") if pins else None,
                "requires_python": meta.get("requires_python"),
                "wheel": item.get("download_info", {}).get("url", "").rsplit("/", 1)[-1] or None,
            }
    return out


def torch_python_classifiers(torch_dir: Path) -> Optional[tuple]:
    for meta in sorted(torch_dir.parent.glob("torch-*.dist-info/METADATA")):
        text = meta.read_text(encoding="utf-8")
        version = re.search(r"^Version: (.+)$", text, flags=re.M).group(1).strip()
        pys = sorted(set(re.findall(r"^Classifier: Programming Language :: Python :: (3\.\d+)$", text, flags=re.M)),
                     key=version_tuple)
        return version, pys
    return None


def fetch_pypi(target: Path) -> int:
    target.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "torch-npu"], capture_output=True, text=True)
    m = re.search(r"Available versions: (.+)", r.stdout)
    if not m:
        print(f"error: pip index versions torch-npu failed: {r.stderr.strip()[-300:]}", file=sys.stderr)
        return 1
    for v in [x.strip() for x in m.group(1).split(",")]:
        out = target / f"report_{v}.json"
        if out.exists():
            continue
        print(f"pip metadata for torch-npu=={v}")
        subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
                        "--quiet", "--report", str(out), f"torch-npu=={v}"], capture_output=True)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pytorch-git", type=Path)
    ap.add_argument("--ref", default="master")
    ap.add_argument("--pypi-dir", type=Path)
    ap.add_argument("--torch", type=Path, action="append", default=[])
    ap.add_argument("--fetch-pypi", type=Path, metavar="DIR")
    ap.add_argument("--output", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    if args.fetch_pypi:
        return fetch_pypi(args.fetch_pypi)
    if not args.pytorch_git:
        ap.error("--pytorch-git is required")

    compat = git_show(args.pytorch_git, args.ref, "COMPATIBILITY.en.md")
    if compat is None:
        print(f"error: no COMPATIBILITY.en.md at {args.ref} in {args.pytorch_git}", file=sys.stderr)
        return 2
    rev = git_rev(args.pytorch_git, args.ref)
    parsed = parse_compatibility(compat)
    print(f"read Ascend/pytorch {args.ref} ({rev}) COMPATIBILITY.en.md: {len(parsed['rows'])} rows, "
          f"python table for {len(parsed['python'])} torch versions")
    source_label = f"Ascend/pytorch {args.ref} {rev} COMPATIBILITY.en.md"

    build: Dict[str, dict] = {}
    for r in parsed["rows"]:
        readme = git_show(args.pytorch_git, r["branch"], "README.en.md") or git_show(args.pytorch_git, r["branch"], "README.md")
        notes = build_notes(readme) if readme else {}
        if notes:
            build[r["branch"]] = notes
    print(f"read build notes (gcc/ABI) from {len(build)} release branches' README")

    rows = [dict(r, source=source_label) for r in parsed["rows"]]
    pypi = read_pypi(args.pypi_dir) if args.pypi_dir else {}
    if args.pypi_dir:
        print(f"read {len(pypi)} PyPI torch-npu releases from {args.pypi_dir}")
    known = {r["torch_npu"] for r in rows}
    for v, meta in pypi.items():
        r_match = [r for r in rows if r["torch_npu"] == v]
        for r in r_match:
            r["on_pypi"] = True
            if meta["torch"] and minor_key(meta["torch"]) != minor_key(r["torch"]):
                print(f"  warning: {v}: matrix says torch {r['torch']}, wheel pins {meta['torch']}")
        if v not in known and version_tuple(v) >= version_tuple("2.1"):
            rows.append({"torch_npu": v, "beta": False, "branch": None, "torch": meta["torch"], "cann": None,
                         "status": "pypi-only", "on_pypi": True,
                         "source": "PyPI torch-npu metadata (Requires-Dist torch pin); CANN pairing not published"})
    for r in rows:
        r.setdefault("on_pypi", False)
    rows.sort(key=lambda r: (version_tuple(r["torch_npu"]), r["cann"] or ""), reverse=True)

    python = {k: {"versions": v, "source": source_label} for k, v in parsed["python"].items()}
    for d in args.torch:
        found = torch_python_classifiers(d)
        if found and minor_key(found[0]) not in python and found[1]:
            python[minor_key(found[0])] = {"versions": found[1], "source": f"torch {found[0]} wheel classifiers"}
            print(f"  python for torch {found[0]} from its classifiers: {found[1]}")

    rec = parsed["recommended"]
    data = {
        "_source": {"matrix": source_label, "build_notes": "README.en.md of each release branch of Ascend/pytorch",
                    "pypi": "pip --report metadata of every torch-npu release on PyPI" if pypi else None},
        "_generated_by": "tools/gen_version_matrix.py",
        "recommended": {"torch_npu": rec.get("torchnpu", "").split()[0] if rec.get("torchnpu") else None,
                        "torch": rec.get("pytorch"), "cann": rec.get("cann"),
                        "python": re.findall(r"3\.\d+", rec.get("python", ""))},
        "rows": rows,
        "python": python,
        "build": build,
        "hardware": parsed["hardware"],
        "pypi": pypi,
    }
    write_json(args.output, data, indent=1)
    counts: Dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print(f"rows: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
