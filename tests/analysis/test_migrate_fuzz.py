"""A bounded run of migrate's fuzz campaign (tools/fuzz_migrate.py): generated programs (hypothesmith)
and mutated real files; no traceback, no hang, no non-idempotent output, no change outside rewrites."""
from __future__ import annotations

import random

import pytest

from subproc import load_tool

pytest.importorskip("hypothesmith", reason="the fuzz campaign needs hypothesmith (test extra)")

fuzz = load_tool("fuzz_migrate")


def test_bounded_campaign(capsys):
    assert fuzz.main(["--cases", "300", "--seconds", "45", "--seed", "7"]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    total = int(out.split()[1])
    assert total >= 100, out  # the time bound must still leave a real campaign


def test_checker_sees_a_change_outside_the_rewrites():
    """The oracle is not vacuous: an edit migrate did not report is caught."""
    class Outcome:
        changes = []

    before = b"x = 1\ny = 2\n"
    assert fuzz._outside_change(before, b"x = 1\ny = 3\n", "utf-8", Outcome())
    assert fuzz._outside_change(before, b"\xef\xbb\xbfx = 1\ny = 2\n", "utf-8", Outcome()) == "BOM changed"
    assert fuzz._outside_change(before, before, "utf-8", Outcome()) == ""


def test_mutations_cover_the_damage_classes():
    rng = random.Random(3)
    seen = set()
    for _ in range(300):
        text, enc = fuzz.mutate("import torch\nx = y.cuda()\n", rng)
        seen.update(k for k, c in (("cookie", enc == "latin-1"), ("bom", text.startswith("\ufeff")),
                                   ("crlf", "\r\n" in text), ("ff", "\x0c" in text)) if c)
    assert seen == {"cookie", "bom", "crlf", "ff"}
