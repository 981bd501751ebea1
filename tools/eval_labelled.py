"""Recall, precision, trap and difficulty agreement of ``ascend-compat check`` on a labelled set of third-party files.

Usage: ``python tools/eval_labelled.py LABELS.json ROOT [--part dev|held-out|all] [--quiet]``.

ROOT holds each labelled file at ``ROOT/<repo>/<path>`` (the files themselves are not part of this
repository; fetch them at the recorded commit). When ``ROOT/<repo>`` holds more than the labelled
files (a whole checkout), the whole checkout is checked at once, as a user checks a project, so
that facts one module gives another (a constant, a build script's extension names) count; only the
labelled files are scored. Files missing under ROOT are listed and left out.

Label format (``tests/analysis/labelled/*.json``): per file ``repo``, ``commit``, ``path``,
``must_find`` (lines holding a CUDA-specific construct), optionally ``may_find`` (lines where a
finding is neither required nor wrong: CUDA meaning one step removed), ``traps`` (lines that only
mention CUDA/GPU/NCCL in a comment, docstring, message or non-CUDA code: a finding there is a false
alarm), ``difficulty`` (none/easy/moderate/hard, the level a person expects) and ``held_out``.

Recall = must-find lines with at least one finding / must-find lines. Precision = findings on
must-find lines / findings not on may-find lines. Difficulty agreement = files whose rating equals
the label / files with a label. Prints one line per miss, unlabelled finding, flagged trap and
difficulty disagreement (unless ``--quiet``), then the totals for the chosen part.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict


def _results_by_path(root: str, repo: str, paths: list) -> dict:
    """FileResult per labelled path: the whole checkout is analysed together when it is there."""
    from ascend_compat.analysis.scan import scan_paths

    base = os.path.join(root, repo)
    res = scan_paths([base], use_gitignore=False, jobs=1)
    # a file reached through a symlinked directory is analysed once, under the first path the walk
    # meets (colossalai/kernel/extensions -> ../../extensions): look labelled paths up by real path
    by_real = {os.path.realpath(r.path): r for r in res.files}
    return {p: by_real.get(os.path.realpath(os.path.join(base, p))) for p in paths}


def evaluate(doc: dict, root: str, part: str = "all", quiet: bool = False, out=sys.stdout) -> dict:
    """Score the labelled files of ``doc`` (``part``: all, dev or held-out); returns the totals."""
    from ascend_compat.analysis.difficulty import rate_file

    entries = [e for e in doc["files"]
               if part == "all" or (part == "held-out") == bool(e.get("held_out"))]
    missing = [e for e in entries if not os.path.isfile(os.path.join(root, e["repo"], e["path"]))]
    entries = [e for e in entries if e not in missing]
    by_repo = defaultdict(list)
    for e in entries:
        by_repo[e["repo"]].append(e)
    t = dict(files=len(entries), labelled=0, hit=0, found=0, correct=0, traps=0, traps_flagged=0,
             rated=0, agree=0)
    for repo, es in sorted(by_repo.items()):
        results = _results_by_path(root, repo, [e["path"] for e in es])
        for e in es:
            r = results[e["path"]]
            findings = r.findings if r is not None else []
            name = f"{repo}/{e['path']}"
            lines = {f.line for f in findings}
            want = {m["line"]: m["construct"] for m in e["must_find"]}
            may = set(e.get("may_find", ()))
            traps = set(e.get("traps", ()))
            for line, what in sorted(want.items()):
                t["labelled"] += 1
                if line in lines:
                    t["hit"] += 1
                elif not quiet:
                    print(f"MISS  {name}:{line}  {what}", file=out)
            for f in findings:
                if f.line in may and f.line not in want:
                    continue
                t["found"] += 1
                if f.line in want:
                    t["correct"] += 1
                elif not quiet:
                    print(f"EXTRA {name}:{f.line}  {f.rule}  {f.message}", file=out)
            t["traps"] += len(traps)
            flagged = sorted(traps & lines)
            t["traps_flagged"] += len(flagged)
            if flagged and not quiet:
                print(f"TRAP  {name}: lines {flagged} flagged", file=out)
            if "difficulty" in e:
                t["rated"] += 1
                level = rate_file(r).level if r is not None else "none"
                if level == e["difficulty"]:
                    t["agree"] += 1
                elif not quiet:
                    print(f"LEVEL {name}: rated {level}, labelled {e['difficulty']}", file=out)
    for e in missing:
        print(f"not found (skipped): {os.path.join(root, e['repo'], e['path'])}", file=sys.stderr)
    t["recall"] = t["hit"] / t["labelled"] if t["labelled"] else float("nan")
    t["precision"] = t["correct"] / t["found"] if t["found"] else float("nan")
    t["difficulty"] = t["agree"] / t["rated"] if t["rated"] else float("nan")
    print(f"[{part}] files {t['files']}  labelled {t['labelled']}  recall {t['recall']:.3f} ({t['hit']}/{t['labelled']})  "
          f"precision {t['precision']:.3f} ({t['correct']}/{t['found']})  traps flagged {t['traps_flagged']}/{t['traps']}  "
          f"difficulty {t['difficulty']:.3f} ({t['agree']}/{t['rated']})", file=out)
    return t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("labels")
    ap.add_argument("root")
    ap.add_argument("--part", choices=("all", "dev", "held-out"), default="all",
                    help="score all files, only those used in development, or only the held-out ones")
    ap.add_argument("--quiet", action="store_true", help="print the totals only")
    a = ap.parse_args(argv)
    with open(a.labels, encoding="utf-8") as fh:
        doc = json.load(fh)
    evaluate(doc, a.root, a.part, a.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
