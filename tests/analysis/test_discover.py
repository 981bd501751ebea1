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


def _contained_tree(tmp_path):
    """root/ with links out of it (``up -> ..``, a file and a directory elsewhere) and links inside it."""
    outside = tmp_path / "outside"
    _tree(outside, ["secret.py", "pkg/deep.py"])
    (outside / ".gitignore").write_text("nothing/\n")
    root = tmp_path / "root"
    _tree(root, ["a.py", "sub/b.py"])
    (root / "up").symlink_to("..", target_is_directory=True)
    (root / "sub" / "linked.py").symlink_to(outside / "secret.py")
    (root / "linked_dir").symlink_to(outside / "pkg", target_is_directory=True)
    (root / "sub" / "alias.py").symlink_to(root / "a.py")           # inside: the same file, once
    (root / "sub" / "again").symlink_to(root / "sub", target_is_directory=True)  # inside: a loop
    (root / ".gitignore").symlink_to(outside / ".gitignore")         # not even read
    return root, outside


def test_symlinks_out_of_the_given_paths_are_not_followed(tmp_path):
    """The containment rule: a link met in the walk is followed only when its target lies inside a
    given path; the others are reported (the link, never what is behind it). Before, ``up -> ..``
    made check read and list every file of the parent directory."""
    root, outside = _contained_tree(tmp_path)
    targets, problems = discover([str(root)])
    assert _rel(targets, root) == ["a.py", "sub/b.py"]
    assert sorted((os.path.relpath(p, root), k) for p, k, _ in problems) == [
        ("linked_dir", "outside-link"), ("sub/again", "symlink-loop"), ("sub/linked.py", "outside-link"),
        ("up", "outside-link")]
    assert all(str(outside) not in msg for _, _, msg in problems)
    # a link into another given path is inside: followed
    targets, problems = discover([str(root), str(outside)])
    rel = _rel(targets, tmp_path)
    assert "root/linked_dir/deep.py" in rel or "outside/pkg/deep.py" in rel
    assert [os.path.relpath(p, root) for p, k, _ in problems if k == "outside-link"] == ["up"]
    # a path given explicitly is used as given, even a link
    targets, problems = discover([str(root / "sub" / "linked.py")])
    assert [t.path for t in targets] == [str(root / "sub" / "linked.py")] and problems == []


def test_check_and_migrate_read_and_report_nothing_outside(tmp_path):
    """check's report and migrate's diff name no file outside the given tree, and migrate --write
    changes none there."""
    import json
    import subprocess
    import sys

    from subproc import clean_env

    root, outside = _contained_tree(tmp_path)
    (outside / "secret.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    before = (outside / "secret.py").read_bytes()
    env = clean_env(NO_COLOR="1")
    check = subprocess.run([sys.executable, "-m", "ascend_compat", "check", "--format", "json", str(root)],
                           capture_output=True, text=True, timeout=120, env=env)
    report = json.loads(check.stdout)
    assert "secret" not in check.stdout and "deep.py" not in check.stdout and "outside" not in check.stderr
    assert sorted(os.path.relpath(f["path"], root) for f in report["files"] if f["error"]) == [
        "linked_dir", "sub/again", "sub/linked.py", "up"]
    (root / "a.py").write_text("import torch\ny = torch.zeros(1).cuda()\n")
    for extra in ([], ["--write"]):
        mig = subprocess.run([sys.executable, "-m", "ascend_compat", "migrate", *extra, str(root)],
                             capture_output=True, text=True, timeout=120, env=env)
        assert "secret" not in mig.stdout + mig.stderr and "deep.py" not in mig.stdout + mig.stderr
    assert (outside / "secret.py").read_bytes() == before
    assert ".npu()" in (root / "a.py").read_text()


def test_pathological_gitignore_patterns_match_in_bounded_time(tmp_path):
    """A .gitignore line like '**/' x 25 + 'zz' or 'a*a*...*b' made the regex engine backtrack for
    minutes on a deep path (check never returned); patterns of more than two wildcards are now matched
    token by token, and still mean what they meant."""
    import random
    import re
    import subprocess
    import sys

    from ascend_compat.analysis import discover as d
    from subproc import clean_env

    deep = tmp_path.joinpath(*["d"] * 25)
    deep.mkdir(parents=True)
    (deep / "a.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    (deep / "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.py").write_text("x = 1\n")
    (tmp_path / ".gitignore").write_text("**/" * 25 + "zz\n" + "a" + "*a" * 30 + "b\n")
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "check", "--format", "concise", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, env=clean_env(NO_COLOR="1"))
    assert proc.returncode == 0 and "a.py:2" in proc.stdout, proc.stderr
    rng = random.Random(1)
    for _ in range(5000):  # the token matcher agrees with the regex on every small pattern and path
        pat = "".join(rng.choice("ab/*?") for _ in range(rng.randint(1, 8)))
        frags = d._translate(pat.lstrip("/"))
        if "/" not in pat:
            frags.insert(0, d._DIRS)
        rx = re.compile("".join(frags) + r"\Z", re.S)
        for _ in range(4):
            path = "".join(rng.choice("ab/") for _ in range(rng.randint(0, 10)))
            assert bool(rx.match(path)) == d._Glob(frags).match(path), (pat, path)
