"""``--format json``: the report dict of :mod:`.schema`, pretty-printed, keys in a stable order."""
from __future__ import annotations

import json
from typing import Iterator


def render(report: dict, **_kw) -> str:
    return "".join(render_chunks(report))


def render_chunks(report: dict, **_kw) -> Iterator[str]:
    """The JSON text in pieces as the encoder makes them (json.dumps with an indent builds a list of every
    piece before joining them: 1.6 GB for a report of a million findings)."""
    yield from json.JSONEncoder(indent=2, ensure_ascii=False).iterencode(report)
    yield "\n"
