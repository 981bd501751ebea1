"""A bounded run of the end-to-end fuzz target (tools/fuzz_analysis.py): check and migrate --write,
run by a worker process the fuzzer restarts, on generated programs, mutated real files, nested and
huge expressions, damaged bytes and notebooks of the wrong types; no signal, hang, traceback, change
outside the tree, stray file, non-idempotent or unreported rewrite."""
from __future__ import annotations

import random

import pytest

from subproc import load_tool

pytest.importorskip("hypothesmith", reason="the fuzz target needs hypothesmith (test extra)")

fuzz = load_tool("fuzz_analysis")


def test_bounded_campaign(capsys):
    assert fuzz.main(["--seconds", "45", "--generated", "8", "--seed", "11"]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert int(out.split()[1]) >= 40, out  # the time bound still leaves a real campaign
    for family in ("generated", "mutated", "nested", "damaged", "notebook", "native"):
        assert f"  {family} " in out, out


def test_the_judge_sees_each_kind_of_failure(tmp_path):
    """The oracles are not vacuous: a traceback, an exit code, a changed outside file, a stray file,
    a second rewrite and an unreported change are each caught."""
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    (tree / "a.py").write_text("x = 1\n")
    (outside / "s.py").write_text("y = 2\n")
    before_tree, before_out = fuzz._snapshot(str(tree)), fuzz._snapshot(str(outside))
    ok = (0, "{}", "", 0.1)
    clean = (0, "", "ascend-compat migrate: rewrote 0 file(s), 0 change(s)\n", 0.1)

    def judge(results):
        return fuzz._judge("x", results, [], str(tree), str(outside), before_out, before_tree)[0]

    assert judge([ok, clean, clean]) == "ok"
    assert judge([(4, "", "internal error: boom", 0.1), clean, clean]) == "traceback"
    assert judge([ok, (0, "", "Traceback (most recent call last):", 0.1), clean]) == "traceback"
    assert judge([ok, clean, (0, "", "ascend-compat migrate: rewrote 1 file(s), 1 change(s)\n", 0.1)]) == "nonidempotent"
    (tree / ".a.py.ascend-compat-1-x.tmp").write_text("")
    assert judge([ok, clean, clean]) == "stray"
    (tree / ".a.py.ascend-compat-1-x.tmp").unlink()
    assert judge([(0, f'{{"path": "{tree / "up" / "outside" / "s.py"}"}}', "", 0.1), clean, clean]) == "outside"
    (outside / "s.py").write_text("y = 3\n")
    assert judge([ok, clean, clean]) == "outside"
    (tree / "a.py").write_text("x = 2\n")
    assert fuzz._oracle(b"x = 1\n", tree / "a.py", [])[0] == "unreported"


def test_cases_cover_every_family():
    rng = random.Random(5)
    reals = [("t.py", "import torch\nx = torch.zeros(1).cuda()\n")]
    seen = {family for family, _ in (next(g) for g in [fuzz.cases(rng, reals, [("x = 1\n", "utf-8")] * 5)] * 400)}
    assert seen == {"generated", "mutated", "nested", "damaged", "notebook", "native", "killed"}
