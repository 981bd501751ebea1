"""``--format json``: the report dict of :mod:`.schema`, pretty-printed, keys in a stable order."""
from __future__ import annotations

import json


def render(report: dict, **_kw) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"
