"""``--format concise``: one ``path:line:col: RULE message (handling)`` line per finding, which
editors and terminals turn into links; a summary line ends the output. Notebook findings name the
cell (``nb.ipynb:cell 3:4:1: ...``); files that could not be analysed are ``input-error`` lines."""
from __future__ import annotations

from ascend_compat.analysis.report.locations import entries


def render(report: dict, **_kw) -> str:
    lines = []
    for e in entries(report):
        where = f"{e.path}:" + (f"cell {e.cell}:" if e.cell is not None else "") + f"{e.line}:{e.col}"
        lines.append(f"{where}: {e.rule} {e.message} ({e.handling})")
    s = report["summary"]
    lines.append(f"Found {s['total']} CUDA reference(s) in {s['files_with_findings']} file(s)"
                 + (f", {s['files_with_errors']} file(s) not analysed" if s["files_with_errors"] else "")
                 + f"; difficulty {s['difficulty']['level']}.")
    return "\n".join(lines) + "\n"
