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
