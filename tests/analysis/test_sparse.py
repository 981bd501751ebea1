"""analysis/sparse.py: the statements that hold no trigger are blanked out at any depth before the parse, and
the findings stay those of a whole-file analysis (what is kept is what the visitor visits)."""
from __future__ import annotations

import pytest

from ascend_compat.analysis import scan, sparse
from test_scan_memory import _full, assert_as_whole_file
from test_scan_robustness import _torch_files

#: statements the text alone could cut wrongly: decorators, headers over several lines, a continuation line
#: at the body's indentation, a docstring holding lines that look like statements, ''' inside """, a
#: backslash, one-line compound statements, try/except/else/finally, match, a trigger in a comment after a
#: function's last statement, a star import, an Ellipsis body, nested functions, a class whose header is hot, a
#: string continued by a backslash onto a line at column 0 (which looks like a top-level statement)
_TRICKY = '''import torch
from torch.functional import *  # noqa
import torch.distributed as dist


def plain(a, b):
    x = a + b
    y = x * 2
    return y


@torch.no_grad()
def decorated_cold(x):
    s = x.sum()
    return s


@staticmethod
def decorated_hot(x):
    n = 1
    return x.cuda()


def header(
    a: int,
    b: int = 2,
) -> int:
    total = a + b
    dev = torch.device("cuda", a)
    other = total
    return dev


def continued(x):
    r = torch.cat(
    [x, x],
    dim=0)
    q = r
    return q.to("cuda")


def documented(model):
    """Moves the model.

    model = build()
    model.train()
    x = \'\'\'inner\'\'\'
    """
    m = model
    return m.cuda()


def backslash(x):
    y = x + \\
        1
    z = y
    return torch.cuda.is_available()


def one_liners(x):
    if x: return x
    for i in range(3): x = x + i
    while False: pass
    return x.cuda() if torch.cuda.is_available() else x


def tried(path):
    try:
        import apex
        ok = True
    except ImportError:
        apex = None
        ok = False
    else:
        value = 1
    finally:
        done = True
    return apex, ok


def matched(cmd):
    match cmd:
        case "a":
            return 1
        case "gpu":
            return torch.device("cuda")
        case _:
            return 0


def trailing(x):
    a = x
    b = a
    # cuda mentioned after the last statement


def stub(x) -> int: ...


def outer(x):
    def inner(y):
        z = y * 2
        w = z + 1
        return w.cuda()
    def cold(y):
        return y
    v = inner(x)
    return cold(v)


class Wrapped(torch.nn.DataParallel):
    def forward(self, x):
        y = x + 1
        return y

    def cold(self):
        return 1


def continued_string(x):
    y = x.cuda()
    if x is None:
        raise RuntimeError(
            f"bad \\
layout {x}"
        )


class Plain:
    attr = 1

    def hot(self):
        dist.init_process_group("nccl")

    def cold(self):
        return 2
''' + "\n".join(f"padding_{i} = {i}" for i in range(200)) + "\n"


@pytest.fixture
def always_sparse(monkeypatch):
    """Every file goes the sparse way (short files too); counts the sparse parses that were accepted."""
    monkeypatch.setattr(scan, "_SPARSE_MIN_LINES", 0)
    used = []
    real = scan._feed_sparse

    def spy(*a, **k):
        ok = real(*a, **k)
        used.append(ok)
        return ok

    monkeypatch.setattr(scan, "_feed_sparse", spy)
    return used


@pytest.mark.parametrize("variant", ["lf", "crlf", "tabs"])
def test_tricky_statements_give_the_findings_of_a_whole_file_analysis(variant, always_sparse, tmp_path):
    text = _TRICKY
    if variant == "tabs":
        text = text.replace("    ", "\t")
    f = tmp_path / "tricky.py"
    f.write_bytes(text.encode().replace(b"\n", b"\r\n") if variant == "crlf" else text.encode())
    r = scan.scan_file(str(f))
    want = _full(str(f), f.read_bytes().decode())
    assert r.error is None and [x.to_dict() for x in r.findings] == want
    assert len(want) >= 8
    assert always_sparse and all(always_sparse)  # the sparse parse was used, not the fallback


@pytest.mark.parametrize("path", _torch_files(40))
def test_torch_files_give_the_findings_of_a_whole_file_analysis(path, always_sparse):
    assert_as_whole_file(path)


def test_torch_files_are_mostly_parsed_sparse(always_sparse):
    for path in _torch_files(40):
        scan.scan_file(path)
    assert sum(always_sparse) >= 0.8 * len(always_sparse) > 10


def test_the_sparse_text_keeps_lines_and_columns():
    pos = [_TRICKY.index("x.cuda()"), _TRICKY.index('"nccl"')]
    sp = sparse.blank_cold(_TRICKY, pos)
    old, new = _TRICKY.split("\n"), sp.text.split("\n")
    assert len(old) == len(new)
    kept = [i for i, line in enumerate(new) if line.strip() and line.strip() != "0"]
    assert all(new[i] == old[i] for i in kept)
    assert "return x.cuda()" in sp.text and "def decorated_hot(x):" in sp.text and "@staticmethod" in sp.text
    assert "s = x.sum()" not in sp.text and "total = a + b" not in sp.text
    assert len(sp.text) < len(_TRICKY) / 3
    assert all(new[line - 1].strip() == "0" for line in sp.placeholders)


def test_a_cut_inside_a_string_is_caught():
    """With the strings hidden from it, the cutter cuts inside a docstring; the parse shows it."""
    text = 'def f(x):\n    """doc\n    a = 1\n    b = x.cuda()\n    """\n    return x\n'
    pos = [text.index("cuda")]
    sp = sparse.blank_cold(text, pos, ([], []))
    assert sp is not None  # cut where the docstring's lines look like statements
    try:
        tree = scan._parse(sp.text, "f.py")
    except SyntaxError:
        return
    assert not sp.verified(tree)
    right = sparse.blank_cold(text, pos)
    assert right is None or right.verified(scan._parse(right.text, "f.py"))


def test_an_unclosed_string_is_not_cut():
    assert sparse.triple_strings('x = 1\ns = """never closed\n') is None
    assert sparse.blank_cold('import torch\ns = """never closed\nx.cuda()\n', [25]) is None


def _two_rounds(text: str):
    """Sparse copies of ``text`` for a first round (every other hot position) and a second one (all of them)."""
    pos, _ = scan.hot_positions(text)
    return sparse.blank_cold(text, pos[::2]), sparse.blank_cold(text, pos)


def _dump(tree) -> str:
    import ast

    return ast.dump(tree, include_attributes=True)


@pytest.mark.parametrize("variant", ["lf", "tabs", "torch"])
def test_a_later_round_gives_the_tree_of_a_whole_parse_reusing_what_did_not_change(variant):
    """reparse: the statements a second round does not un-blank are the first round's objects, the rest
    parsed at their own line numbers; the tree equals the whole sparse text's parse, positions included."""
    texts = [_TRICKY.replace("    ", "\t") if variant == "tabs" else _TRICKY] if variant != "torch" else \
        [open(p, encoding="utf-8").read() for p in _torch_files(40)]
    reused = compared = 0
    for text in texts:
        first, second = _two_rounds(text)
        if first is None or second is None or first.text == second.text:
            continue
        old = scan._parse(first.text, "f.py")
        tree = sparse.reparse(second.text, first.text, old, lambda t: scan._parse(t, "f.py"))
        assert _dump(tree) == _dump(scan._parse(second.text, "f.py"))
        compared += 1
        reused += any(s is o for s in tree.body for o in old.body)
    assert compared >= (1 if variant != "torch" else 10)
    assert reused >= compared // 2  # (not a whole parse in disguise)


def test_reparse_falls_back_to_a_whole_parse_when_the_copies_do_not_line_up():
    old = "import torch\nx = 1\n"
    tree = sparse.reparse("import torch\nx = 1\ny = 2\n", old, scan._parse(old, "f.py"), lambda t: scan._parse(t, "f"))
    assert len(tree.body) == 3


@pytest.fixture
def rounds(monkeypatch):
    """path -> how many sparse rounds each analysis of that file took (one list entry per analysis)."""
    seen: dict = {}
    real_rel, real_feed = scan._analyse_relevant, scan._feed_sparse

    def relevant(path, *a, **k):
        seen.setdefault(path, []).append(0)
        return real_rel(path, *a, **k)

    def feed(path, *a, **k):
        seen[path][-1] += 1
        return real_feed(path, *a, **k)

    monkeypatch.setattr(scan, "_analyse_relevant", relevant)
    monkeypatch.setattr(scan, "_feed_sparse", feed)
    return seen


_PADDING = "\n".join(f"padding_{i} = {i}" for i in range(200)) + "\n"


def test_a_library_imported_under_its_own_name_is_a_trigger_word_from_the_first_round(rounds, tmp_path):
    """``import triton``: uses say only ``triton``; found in the first round, not by a second one."""
    f = tmp_path / "kernels.py"
    f.write_text("import triton\n\n\ndef blocks(n):\n    size = 128\n    return triton.cdiv(n, size)\n\n\n" + _PADDING)
    r = scan.scan_file(str(f))
    assert [x.to_dict() for x in r.findings] == _full(str(f), f.read_text())
    assert any(x.line == 6 for x in r.findings)
    assert rounds[str(f)] == [1]


def test_a_later_project_pass_starts_from_the_names_the_file_followed_before(rounds, tmp_path, monkeypatch):
    """The second pass re-analyses a file the project's facts reach; the names its first pass found round by
    round (``flag``, bound to torch.version.cuda) are trigger words of its first round there. The findings are
    those of a second pass that finds them again."""
    from ascend_compat.analysis import project

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "consts.py").write_text('SYSTEM = "cuda"\n')
    user = tmp_path / "pkg" / "user.py"
    user.write_text("import torch\nfrom pkg.consts import SYSTEM\nflag = torch.version.cuda\n\n\n"
                    "def move(x):\n    y = x + 1\n    if flag:\n        y = y * 2\n    return y.to(SYSTEM)\n\n\n"
                    + _PADDING)
    res = scan.scan_paths([str(tmp_path)], use_gitignore=False, jobs=1)
    got = {r.path: [x.to_dict() for x in r.findings] for r in res.files}
    assert rounds[str(user)] == [2, 1]  # first pass: two rounds (flag found in the first); second pass: one
    real = project.facts_of
    monkeypatch.setattr(project, "facts_of", lambda *a: __import__("dataclasses").replace(real(*a), followed=frozenset()))
    again = scan.scan_paths([str(tmp_path)], use_gitignore=False, jobs=1)
    assert {r.path: [x.to_dict() for x in r.findings] for r in again.files} == got
    assert rounds[str(user)][2:] == [2, 2]
    assert any(x["line"] == 8 for x in got[str(user)])  # the gate on flag


def test_names_are_found_the_same_one_by_one_and_in_one_pass_over_the_words():
    text = _TRICKY
    names = ["x", "torch", "dist", "model", "a", "b", "cuda", "absent"] + [f"padding_{i}" for i in range(30)]
    one_pass = scan._occurrences(text, names)  # (over _FIND_EACH names: one pass over the words)
    assert len(names) > scan._FIND_EACH
    for name in names:
        assert scan._occurrences(text, [name])[name] == one_pass[name]
    assert one_pass["absent"] == [] and len(one_pass["torch"]) >= 3
    index = scan._NameIndex(text)
    assert index.positions(["x", "dist"]) == sorted(one_pass["x"] + one_pass["dist"])
    assert index.positions(["dist", "torch"]) == sorted(one_pass["dist"] + one_pass["torch"])


def test_lines_of_a_hot_statement_that_hold_no_trigger_are_not_visited(tmp_path, rounds):
    """A kept statement's header test and a table's cold rows are skipped like cold statements (their spans are
    recorded); a name found later that occurs in one of them (``flag`` in the if test) starts another round, so
    the findings stay those of the whole file."""
    from ascend_compat.analysis.visitor import PyAnalyzer

    text = ("import torch\nflag = torch.version.cuda\n\n\n"
            "def move(x, table):\n    if x.dim() > 2 and flag:\n        x = x.cuda()\n    return x\n\n\n"
            "ROWS = [\n    ('a', 1),\n    ('b', torch.float64),\n    ('c', 3),\n]\n" + _PADDING)
    an = PyAnalyzer("m.py", text, hot_lines=[1, 2, 7, 13])
    an.feed(scan._parse(text, "m.py"))
    assert (6, 6) in an.skipped  # the if test (cold in a first round: flag is not a trigger word yet)
    assert (12, 12) in an.skipped and (14, 14) in an.skipped  # the table's cold rows
    assert not any(lo <= 13 <= hi for lo, hi in an.skipped)
    f = tmp_path / "m.py"
    f.write_text(text)
    r = scan.scan_file(str(f))
    assert [x.to_dict() for x in r.findings] == _full(str(f), text)
    assert any(x.line == 6 for x in r.findings)  # the gate on flag, found in the second round
    assert rounds[str(f)] == [2]


def test_a_string_line_that_looks_like_a_clause_is_not_cut_as_one(tmp_path):
    """A multi-line string whose line at the statement's indentation reads like a clause (``examples:``, at
    column 0 inside a function's call) made the cutter look for a block inside the string, and the analysis
    failed with an internal error (IndexError; unsloth's dataset_none_detect.py)."""
    text = ('import argparse\nimport torch\n\n\ndef main():\n    parser = argparse.ArgumentParser(\n'
            '        epilog="""\nexamples:\n  python run.py --device cuda\n        """,\n    )\n'
            '    ok = torch.cuda.is_available()\n    return parser, ok\n\n\n' + _PADDING)
    f = tmp_path / "cli.py"
    f.write_text(text)
    r = scan.scan_file(str(f))
    assert r.error is None
    assert [x.to_dict() for x in r.findings] == _full(str(f), text)
    assert any(x.line == 12 for x in r.findings)
