"""File discovery: kinds, .gitignore semantics, --exclude, explicit files."""
from __future__ import annotations

import os

from ascend_compat.analysis.discover import IgnoreRules, discover


def _rel(targets, root):
    return sorted(os.path.relpath(t.path, root) for t in targets)


def _tree(root, files):
    for f in files:
        p = root / f
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("import torch\n")


def test_gitignore_and_exclude(tmp_path):
    _tree(tmp_path, ["a.py", "build/gen.py", "pkg/b.py", "pkg/keep.log.py", "pkg/deep/c.py",
                     "notes.ipynb", "k.cu", "CMakeLists.txt", "README.md", ".git/x.py",
                     "venv/lib/site.py", "data/skip.py"])
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / ".gitignore").write_text("build/\n*.log.py\n!pkg/keep.log.py\n/data\n")
    (tmp_path / "pkg" / ".gitignore").write_text("deep/\n")
    targets, problems = discover([str(tmp_path)])
    assert problems == []
    assert _rel(targets, tmp_path) == ["CMakeLists.txt", "a.py", "k.cu", "notes.ipynb", "pkg/b.py", "pkg/keep.log.py"]
    kinds = {os.path.basename(t.path): t.kind for t in targets}
    assert kinds["k.cu"] == "cuda-source" and kinds["notes.ipynb"] == "notebook" and kinds["CMakeLists.txt"] == "cmake"
    targets, _ = discover([str(tmp_path)], exclude=["pkg/"], use_gitignore=False)
    assert "pkg/b.py" not in _rel(targets, tmp_path) and "build/gen.py" in _rel(targets, tmp_path)


def test_explicit_files_are_never_excluded(tmp_path):
    _tree(tmp_path, ["build/gen.py"])
    (tmp_path / ".gitignore").write_text("build/\n")
    script = tmp_path / "train"
    script.write_text("import torch\n")
    targets, _ = discover([str(tmp_path / "build" / "gen.py"), str(script)])
    assert [(os.path.basename(t.path), t.kind) for t in targets] == [("gen.py", "python"), ("train", "python")]


def test_missing_path_is_a_problem_not_a_crash(tmp_path):
    targets, problems = discover([str(tmp_path / "nope")])
    assert targets == [] and problems[0][1] == "missing"


def test_ignore_rule_semantics():
    r = IgnoreRules().extended("", ["*.py", "!keep.py", "docs/**/gen", "/top.txt"])
    assert r.ignored("a/b.py", False) and not r.ignored("a/keep.py", False)
    assert r.ignored("docs/x/y/gen", True) and r.ignored("docs/gen", True)
    assert r.ignored("top.txt", False) and not r.ignored("sub/top.txt", False)
