"""``--format github``: GitHub Actions workflow commands, shown as annotations on the pull request.

manual -> ``::error``, partial -> ``::warning``, auto -> ``::notice``; files that could not be
analysed -> ``::error`` with title ``input-error``. Values are escaped as the runner expects
(``%``, CR and LF in messages; also ``:`` and ``,`` in properties).
"""
from __future__ import annotations

from ascend_compat.analysis.report.locations import entries

LEVEL = {"manual": "error", "partial": "warning", "auto": "notice", "error": "error"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _relative(path: str) -> str:
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def render(report: dict, **_kw) -> str:
    lines = []
    for e in entries(report):
        props = [f"file={_prop(_relative(e.path))}", f"line={e.line}", f"col={e.col}"]
        if e.cell is None and e.end_line > e.line:
            props.append(f"endLine={e.end_line}")
        elif e.cell is None and e.end_col > e.col:
            props.append(f"endColumn={e.end_col}")
        title = e.rule + (f" (cell {e.cell})" if e.cell is not None else "")
        props.append(f"title={_prop('ascend-compat ' + title)}")
        msg = e.message + (f". Suggestion: {e.suggestion}" if e.suggestion else "")
        lines.append(f"::{LEVEL[e.handling]} {','.join(props)}::{_data(msg)}")
    return "\n".join(lines) + ("\n" if lines else "")
