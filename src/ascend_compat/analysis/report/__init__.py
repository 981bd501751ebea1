"""Report writers for ``check``: text (human), concise (``path:line:col: RULE message``), github
(workflow annotations), json (documented schema, see SCHEMA.md), sarif, csv, and a per-directory
migration plan as markdown or html.

All writers take the dict built by :func:`ascend_compat.analysis.report.schema.build` and return a
string, so every format carries the same information. :func:`render_chunks` gives the same text in
pieces (from the writers that can make it piece by piece: text, json), for output of any size.
"""
from __future__ import annotations

import importlib
from typing import Iterator

#: format -> module (relative to this package) with ``render(report, **kw) -> str``
_WRITERS = {"text": "text", "concise": "concise", "github": "github", "json": "json_report",
            "sarif": "sarif", "csv": "csv_report", "markdown": "plan", "html": "plan"}
FORMATS = tuple(_WRITERS)


def render(fmt: str, report: dict, **kw) -> str:
    """Render ``report`` (from :func:`schema.build`) in ``fmt``."""
    module = _writer(fmt, kw)
    return module.render(report, **kw)


def render_chunks(fmt: str, report: dict, **kw) -> Iterator[str]:
    """:func:`render`'s text in pieces (one piece from writers that make it whole)."""
    module = _writer(fmt, kw)
    if hasattr(module, "render_chunks"):
        yield from module.render_chunks(report, **kw)
    else:
        yield module.render(report, **kw)


def _writer(fmt: str, kw: dict):
    if fmt not in _WRITERS:
        raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    if fmt in ("markdown", "html"):
        kw["html"] = fmt == "html"
    return importlib.import_module(f"{__name__}.{_WRITERS[fmt]}")
