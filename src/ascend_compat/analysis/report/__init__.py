"""Report writers for ``check``: text (human), concise (``path:line:col: RULE message``), github
(workflow annotations), json (documented schema, see SCHEMA.md), sarif, csv, and a per-directory
migration plan as markdown or html.

All writers take the dict built by :func:`ascend_compat.analysis.report.schema.build` and return a
string, so every format carries the same information.
"""
from __future__ import annotations

import importlib

#: format -> module (relative to this package) with ``render(report, **kw) -> str``
_WRITERS = {"text": "text", "concise": "concise", "github": "github", "json": "json_report",
            "sarif": "sarif", "csv": "csv_report", "markdown": "plan", "html": "plan"}
FORMATS = tuple(_WRITERS)


def render(fmt: str, report: dict, **kw) -> str:
    """Render ``report`` (from :func:`schema.build`) in ``fmt``."""
    if fmt not in _WRITERS:
        raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    module = importlib.import_module(f"{__name__}.{_WRITERS[fmt]}")
    if fmt in ("markdown", "html"):
        kw["html"] = fmt == "html"
    return module.render(report, **kw)
