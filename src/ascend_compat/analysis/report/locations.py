"""One flat list of what a report says about each place: findings and input errors alike.

Used by the line-oriented formats (concise, github). A file that could not be analysed becomes one
entry with rule ``input-error`` at the line its parse error names (else line 1).
"""
from __future__ import annotations

import re
from typing import Iterator, NamedTuple

INPUT_ERROR = "input-error"
_LINE = re.compile(r"\bline (\d+)\b")


class Entry(NamedTuple):
    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    rule: str
    handling: str  # auto / partial / manual, or "error" for input errors
    message: str
    suggestion: str
    cell: object = None


def entries(report: dict) -> Iterator[Entry]:
    """Findings in report order, each file's input error (if any) first."""
    for f in report["files"]:
        if f["error"]:
            m = _LINE.search(f["error"]["message"])
            line = int(m.group(1)) if m else 1
            yield Entry(f["path"], line, 1, line, 1, INPUT_ERROR, "error",
                        f"{f['error']['kind']}: {f['error']['message']}", "")
        for x in f["findings"]:
            yield Entry(x["path"], x["line"], x["col"], x["end_line"], x["end_col"], x["rule"], x["handling"],
                        x["message"], x["suggestion"], x.get("cell"))
