"""Another node's environment, from the file a user saved there: ``env > node1.env``, ``export -p``
(``declare -x KEY="value"``), or a shell/env file of ``KEY=value`` / ``export KEY=value`` lines.

:func:`parse` returns the variables (quotes removed, ``#`` comment lines and blank lines skipped); a
line that continues a multi-line value (no ``=`` before any space) belongs to the previous variable.
"""
from __future__ import annotations

import re
import shlex
from typing import Dict

_ASSIGN = re.compile(r"^(?:export\s+|declare\s+-x\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def _value(raw: str) -> str:
    raw = raw.strip()
    if raw[:1] in ("'", '"'):
        try:
            parts = shlex.split(raw, posix=True)
            return parts[0] if parts else ""
        except ValueError:
            return raw.strip("'\"")
    return raw


def parse(text: str) -> Dict[str, str]:
    """The variables in an ``env`` / ``export -p`` / env-file text."""
    out: Dict[str, str] = {}
    last = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _ASSIGN.match(stripped)
        if m:
            last = m.group(1)
            out[last] = _value(m.group(2))
        elif last is not None and not stripped.startswith(("export ", "declare ")):
            out[last] += "\n" + line
    return out


def read(path: str) -> Dict[str, str]:
    """:func:`parse` of the file at ``path`` (OSError when unreadable)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        return parse(fh.read())
