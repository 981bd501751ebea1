"""Golden tests on the fixture corpus: each line's findings are exactly its ``expect:`` comment."""
from __future__ import annotations

import os
from collections import defaultdict

import pytest

from ascend_compat.analysis.rules.catalog import RULES
from ascend_compat.analysis.scan import scan_file

from analysis_helpers import CORPUS, expectations

PY_FILES = ["rules.py", "aliases.py", "traps.py", "suppressed.py", "setup.py", "latin1_cookie.py"]


def _by_line(result):
    got = defaultdict(set)
    for f in result.findings:
        got[f.line].add(f.rule)
    return got


@pytest.mark.parametrize("name", PY_FILES)
def test_findings_match_expectations(name):
    path = os.path.join(CORPUS, name)
    result = scan_file(path, "python")
    assert result.error is None
    expected = expectations(path)
    got = _by_line(result)
    for line in sorted(set(got) | set(expected)):
        assert got.get(line, set()) == expected.get(line, set()), f"{name}:{line}"


def test_traps_file_has_no_findings():
    r = scan_file(os.path.join(CORPUS, "traps.py"))
    assert r.findings == []


def test_every_rule_is_covered_by_the_corpus():
    covered = set()
    for name in PY_FILES:
        covered |= set().union(*expectations(os.path.join(CORPUS, name)).values())
    covered |= {f.rule for f in scan_file(os.path.join(CORPUS, "kern.cu"), "cuda-source").findings}
    assert covered == set(RULES), sorted(set(RULES) - covered)


def test_suppression_counts():
    r = scan_file(os.path.join(CORPUS, "suppressed.py"))
    assert r.suppressed == 2
    assert [(f.line, f.rule) for f in r.findings] == [(5, "cuda-method")]


def test_finding_fields_and_positions():
    r = scan_file(os.path.join(CORPUS, "aliases.py"))
    f = next(f for f in r.findings if f.line == 8)
    assert (f.col, f.end_line, f.end_col) == (10, 8, 16)  # the "cuda" literal in: device = "cuda"
    assert f.handling == "auto" and f.category == "device" and '"npu"' in f.suggestion
    for f in r.findings:
        assert f.handling in ("auto", "partial", "manual") and f.message and f.suggestion


def test_handling_overrides_from_tables():
    r = scan_file(os.path.join(CORPUS, "rules.py"))
    by = {(f.line, f.rule): f for f in r.findings}
    mem = next(f for (l, rule), f in by.items() if rule == "torch-cuda-api" and "memory_usage" in f.message)
    assert mem.handling == "manual"  # torch_npu has no counterpart
    sync = next(f for (l, rule), f in by.items() if rule == "torch-cuda-api" and "synchronize" in f.message)
    assert sync.handling == "auto" and "torch.npu.synchronize" in sync.suggestion
    flash = [f for f in r.findings if f.rule == "cuda-library" and "triton" in f.message]
    assert flash and flash[0].handling == "manual"


def test_build_files():
    cm = scan_file(os.path.join(CORPUS, "CMakeLists.txt"), "cmake")
    assert [f.line for f in cm.findings] == [2, 4, 5, 6]
    cu = scan_file(os.path.join(CORPUS, "kern.cu"), "cuda-source")
    assert [(f.line, f.rule) for f in cu.findings] == [(3, "cuda-source"), (9, "cuda-source")]
    assert "add_kernel" in cu.findings[0].message
    cpp = scan_file(os.path.join(CORPUS, "binding.cpp"), "cpp")
    assert [f.line for f in cpp.findings] == [2, 4]


def test_notebook_cells_and_lines():
    r = scan_file(os.path.join(CORPUS, "notebook.ipynb"), "notebook")
    assert r.error is None
    got = [(f.cell, f.line, f.rule) for f in r.findings]
    assert got == [(2, 2, "device-string"), (3, 3, "cuda-method"), (3, 4, "torch-cuda-api"),
                   (5, 1, "device-string")]
