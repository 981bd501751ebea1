"""Report writers for ``check``: text (human), json (documented schema, see SCHEMA.md), sarif, csv.

All writers take the dict built by :func:`ascend_compat.analysis.report.schema.build` and return a
string, so every format carries exactly the same information.
"""
from __future__ import annotations

FORMATS = ("text", "json", "sarif", "csv")


def render(fmt: str, report: dict, **kw) -> str:
    """Render ``report`` (from :func:`schema.build`) in ``fmt``."""
    if fmt == "json":
        from ascend_compat.analysis.report.json_report import render as r
    elif fmt == "sarif":
        from ascend_compat.analysis.report.sarif import render as r
    elif fmt == "csv":
        from ascend_compat.analysis.report.csv_report import render as r
    elif fmt == "text":
        from ascend_compat.analysis.report.text import render as r
    else:
        raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    return r(report, **kw)
