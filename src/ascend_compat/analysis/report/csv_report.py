"""``--format csv``: one row per finding (files that could not be analysed get one row, rule ``error``)."""
from __future__ import annotations

import csv
import io

COLUMNS = ("path", "cell", "line", "col", "end_line", "end_col", "rule", "category", "handling",
           "message", "suggestion")


def render(report: dict, **_kw) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for f in report["files"]:
        for x in f["findings"]:
            w.writerow([x.get(c, "") if x.get(c) is not None else "" for c in COLUMNS])
        if f["error"]:
            w.writerow([f["path"], "", "", "", "", "", "error", "error", "", 
                        f"{f['error']['kind']}: {f['error']['message']}", ""])
    return buf.getvalue()
