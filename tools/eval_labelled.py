"""Recall and precision of ``ascend-compat check`` on a labelled set of third-party files.

Usage: ``python tools/eval_labelled.py LABELS.json ROOT`` where ROOT holds each labelled file at
``ROOT/<repo>/<path>`` (the files themselves are not part of this repository; fetch them at the
recorded commit). Recall = labelled lines with at least one finding / labelled lines; precision =
findings on labelled lines / all findings. Files missing under ROOT are listed and left out.
Prints one line per miss and per unlabelled finding, then the totals.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from ascend_compat.analysis.scan import scan_file


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("labels")
    ap.add_argument("root")
    a = ap.parse_args(argv)
    with open(a.labels, encoding="utf-8") as fh:
        doc = json.load(fh)
    hit = labelled = correct = found = 0
    missing = []
    for entry in doc["files"]:
        path = os.path.join(a.root, entry["repo"], entry["path"])
        if not os.path.isfile(path):
            missing.append(path)
            continue
        findings = scan_file(path).findings
        lines = {f.line for f in findings}
        want = {m["line"]: m["construct"] for m in entry["must_find"]}
        for line, what in sorted(want.items()):
            labelled += 1
            if line in lines:
                hit += 1
            else:
                print(f"MISS  {entry['repo']}/{entry['path']}:{line}  {what}")
        for f in findings:
            found += 1
            if f.line in want:
                correct += 1
            else:
                print(f"EXTRA {entry['repo']}/{entry['path']}:{f.line}  {f.rule}  {f.message}")
    for m in missing:
        print(f"not found (skipped): {m}", file=sys.stderr)
    recall = hit / labelled if labelled else float("nan")
    precision = correct / found if found else float("nan")
    print(f"files {len(doc['files']) - len(missing)}  labelled {labelled}  recall {recall:.3f} ({hit}/{labelled})  "
          f"precision {precision:.3f} ({correct}/{found})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
