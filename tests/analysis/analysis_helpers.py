"""Shared helpers for the analysis tests (imported by test modules; pytest puts this directory on sys.path)."""
from __future__ import annotations

import os
import re

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
CORPUS = os.path.join(FIXTURES, "corpus")
SCRIPTS = os.path.join(FIXTURES, "scripts")
_EXPECT = re.compile(r"expect:\s*([\w\- ]+)")


def expectations(path: str) -> dict:
    """line -> set of rules expected there, from trailing ``expect: rule ...`` comments (``none`` = empty)."""
    out = {}
    with open(path, encoding="utf-8", errors="replace") as fh:
        for i, line in enumerate(fh, 1):
            m = _EXPECT.search(line)
            if m:
                rules = set(m.group(1).split()) - {"none"}
                out[i] = rules
    return out

