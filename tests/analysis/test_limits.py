"""The bounds of ``analysis/limits.py``: every kind of nesting driven to CPython's own limit and past
it, through check and migrate, in subprocesses (a stack overflow would be a signal): each ends in
findings, a rewrite or one clear message, never a signal or a traceback."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from ascend_compat.analysis import limits
from subproc import clean_env

#: one nesting construct each, around (or next to) a rewritable x.cuda()
CONSTRUCTS = {
    "parens": lambda n: "(" * n + "x.cuda()" + ")" * n,
    "plus": lambda n: " + ".join(["x.cuda()"] + ["a"] * n),
    "attr": lambda n: "x.cuda()" + ".a" * n,
    "call": lambda n: "x.cuda()" + "()" * n,
    "subscript": lambda n: "x.cuda()" + "[0]" * n,
    "unary": lambda n: "-" * n + "x.cuda()",
    "not": lambda n: "not " * n + "x.cuda()",
    "power": lambda n: "**".join(["x.cuda()"] + ["2"] * n),
    "ternary": lambda n: " if c else ".join(["x.cuda()"] + ["a"] * n),
    "lambda": lambda n: "lambda: " * n + "x.cuda()",
    "and": lambda n: " and ".join(["x.cuda()"] + ["a"] * n),
    "compare": lambda n: " < ".join(["x.cuda()"] + ["a"] * n),
    "strings": lambda n: " ".join(['"s"'] * n) + " + x.cuda()",
    "fstring": lambda n: 'f"{' + "-" * n + 'x.cuda()}"',
    "lists": lambda n: "[" * n + "x.cuda()" + "]" * n,
    "blocks": None,
}


def source(kind: str, n: int) -> str:
    if kind == "blocks":
        return "import torch\n" + "".join("    " * i + "if x:\n" for i in range(n)) + "    " * n + "y = x.cuda()\n"
    return "import torch\ny = " + CONSTRUCTS[kind](n) + "\n"


_PROBE = textwrap.dedent("""
    import json, sys
    from ascend_compat.analysis.scan import scan_file
    from ascend_compat.analysis.migrate import MigrateError, migrate_source
    for path in sys.argv[1:]:
        r = scan_file(path)
        out = {"check": [r.error_kind, len(r.findings)]}
        try:
            res = migrate_source(open(path).read(), path)
            out["migrate"] = ["ok", ".npu()" in res.code]
        except MigrateError as exc:
            out["migrate"] = ["refused", str(exc)]
        print(json.dumps(out), flush=True)
""")


def probe(tmp_path, kind: str, *sizes: int) -> list:
    """check's (error kind, findings) and migrate's outcome for ``source(kind, n)``, in one subprocess."""
    files = []
    for n in sizes:
        files.append(tmp_path / f"{kind}_{n}.py")
        files[-1].write_text(source(kind, n))
    proc = subprocess.run([sys.executable, "-c", _PROBE, *map(str, files)], capture_output=True, text=True,
                          timeout=300, env=clean_env())
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, (kind, sizes, proc.returncode, proc.stderr[-2000:])
    return [json.loads(line) for line in proc.stdout.splitlines()]


def _python_accepts(kind: str, n: int) -> bool:
    import ast

    try:
        ast.parse(source(kind, n))
        return True
    except (SyntaxError, RecursionError, MemoryError):
        return False


def _largest(ok, hi: int) -> int:
    """The largest n in [1, hi] with ok(n), for ok true up to some n and false after (bisection)."""
    lo = 1
    if ok(hi):
        return hi
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def _largest_accepted(kind: str) -> int:
    """The largest n CPython's parser accepts (with the normal recursion limit)."""
    return _largest(lambda n: _python_accepts(kind, n), 300 if kind == "blocks" else 40_000)


@pytest.mark.parametrize("kind", sorted(CONSTRUCTS))
def test_every_nesting_up_to_pythons_limit_and_past_it(kind, tmp_path):
    """At the deepest input CPython accepts, check analyses it (under limits.deep when the visitors
    need it) and migrate rewrites it or refuses in one line; past it both give one line. Before,
    migrate died of SIGSEGV on 3000 nested parentheses and ran for minutes on 20,000 terms."""
    top = _largest_accepted(kind)
    sizes = sorted({top, top + 1} | ({20_000} if kind != "blocks" else set()))
    for n, got in zip(sizes, probe(tmp_path, kind, *sizes)):
        accepted = _python_accepts(kind, n)
        if accepted:
            assert got["check"][0] is None and got["check"][1] >= 1, (kind, n, got)
        else:
            assert got["check"][0] in ("parse-error", "too-complex"), (kind, n, got)
        status, detail = got["migrate"]
        assert status == "ok" and detail or status == "refused" and "\n" not in detail, (kind, n, got)
        if not accepted:
            assert status == "refused"


@pytest.mark.parametrize("kind", ["parens", "attr", "call", "subscript", "unary", "lambda", "strings", "and",
                                  "ternary", "plus"])
def test_migrate_rewrites_up_to_max_nesting(kind, tmp_path):
    """Just under MAX_NESTING libcst parses and the rewriter walks the statement (in limits.deep: the
    8 MB main stack overflowed near 1,200 nested parentheses); just over it, one clear refusal."""
    under = 199 if kind == "parens" else _largest(
        lambda n: limits.measure(source(kind, n)).nesting <= limits.MAX_NESTING, 2 * limits.MAX_NESTING)
    got, over = probe(tmp_path, kind, under, under + 1)
    assert got["migrate"] == ["ok", True], (kind, under, got)
    if kind != "parens":  # CPython's 200 bracket limit comes first
        assert over["migrate"][0] == "refused" and "rewrite limit is 1000" in over["migrate"][1], (kind, over)


def test_the_issue_repros_end_in_one_line_and_exit_1(tmp_path):
    """ascend-compat migrate on 3000 nested parentheses (was SIGSEGV, exit 139) and on a 20,000-term
    expression (was minutes): a one-line reason, exit 1; check finds the rest of the file."""
    deep = tmp_path / "deep.py"
    n = 3000
    deep.write_text("import torch\nx = torch.zeros(1).cuda()\ny = " + "(" * n + "1" + ")" * n + "\n")
    long = tmp_path / "long.py"
    long.write_text("import torch\nx = " + " + ".join(["torch.zeros(1).cuda()"] * 20_000) + "\n")
    env = clean_env(NO_COLOR="1")
    for f, why in ((deep, "too many nested parentheses"), (long, "too complex for Python's parser")):
        proc = subprocess.run([sys.executable, "-m", "ascend_compat", "migrate", str(f)], capture_output=True,
                              text=True, timeout=240, env=env)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr[-1000:])
        assert f"{f}: cannot parse: {why}" in proc.stderr
        check = subprocess.run([sys.executable, "-m", "ascend_compat", "check", "--format", "json", str(f)],
                               capture_output=True, text=True, timeout=240, env=env)
        assert check.returncode == 0, check.stderr
        (entry,) = json.loads(check.stdout)["files"]
        assert entry["error"]["kind"] in ("parse-error", "too-complex") and why.split()[0] in entry["error"]["message"]


def test_measure_counts_chains_not_siblings():
    assert limits.measure("y = " + " + ".join(["a"] * 500) + "\n").nesting >= 500
    assert limits.measure("y = x" + ".a" * 500 + "\n").nesting >= 500
    assert limits.measure("y = [" + ", ".join(["a + b"] * 5000) + "]\n").nesting < 10  # list items side by side
    assert limits.measure("".join("    " * i + "if x:\n" for i in range(50)) + "    " * 50 + "pass\n").nesting >= 200
    assert limits.measure('y = f"{' + "-" * 300 + 'x}"\n').nesting >= 300   # inside an f-string too
    assert limits.measure('y = ' + ' '.join(['"s"'] * 400) + "\n").nesting >= 400  # implicit concatenation
    assert limits.measure("x = (\n").nesting >= 1  # does not tokenize: what was read
    ordinary = limits.measure("def f(a, b):\n    return a.b(c)[0] + g(h(i)) * 2\n")
    assert ordinary.work == 0 and ordinary.tokens > 10


def test_deep_runs_with_a_raised_limit_and_restores_it():
    import threading

    before = sys.getrecursionlimit(), threading.stack_size()

    def depth(n):
        return 0 if n == 0 else 1 + depth(n - 1)

    with pytest.raises(RecursionError):
        depth(limits.DEEP_RECURSION_LIMIT + 10)
    assert limits.deep(depth, limits.DEEP_RECURSION_LIMIT - 100) == limits.DEEP_RECURSION_LIMIT - 100
    assert limits.deep(lambda: limits.in_deep()) and not limits.in_deep()
    assert limits.deep(limits.deep, lambda: 5) == 5  # nested: inline
    with pytest.raises(KeyError):
        limits.deep(lambda: {}["missing"])
    assert (sys.getrecursionlimit(), threading.stack_size()) == before


def test_a_statement_past_max_statement_tokens_is_refused_in_one_line():
    """A flat statement of many rewrites (a tuple of 30,000 x.cuda() calls, 180,000 tokens) would hold
    libcst for half a minute and 500 MB: refused before libcst sees it, naming the statement."""
    from ascend_compat.analysis.migrate import MigrateError, migrate_source

    big = "import torch\ny = (" + ", ".join(["x.cuda()"] * 30_000) + ")\n"
    with pytest.raises(MigrateError, match=r"the statement at line 2 is too large to rewrite \(180003 tokens"):
        migrate_source(big)


def test_work_is_bounded_per_file():
    """Many statements each just under MAX_NESTING (libcst's time grows as nesting x size in each):
    their summed work past MAX_WORK leaves the file untouched, with the line where it ran out."""
    from ascend_compat.analysis.migrate import MigrateError, migrate_source

    stmt = "y = " + " + ".join(["x.cuda()"] + ["a"] * 900) + "\n"
    per = limits.measure(stmt).work
    n = limits.MAX_WORK // per + 1
    with pytest.raises(MigrateError, match=r"too deeply nested to rewrite in bounded time \(by line"):
        migrate_source("import torch\n" + stmt * n)
    assert ".npu()" in migrate_source("import torch\n" + stmt * 2).code
