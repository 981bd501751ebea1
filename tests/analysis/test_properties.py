"""Property tests: check and migrate never crash on arbitrary input, and migrated code still parses."""
from __future__ import annotations

import ast
import os

import pytest

pytest.importorskip("hypothesis", reason="property tests need hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ascend_compat.analysis.scan import ScanOptions, _analyse_bytes
from ascend_compat.analysis.findings import FileResult

from analysis_helpers import CORPUS, SCRIPTS

libcst = pytest.importorskip("libcst", reason="migrate properties need libcst")
from ascend_compat.analysis.migrate import MigrateError, migrate_source  # noqa: E402

SNIPPETS = []
for d, names in ((CORPUS, ("rules.py", "aliases.py", "traps.py", "setup.py")),
                 (SCRIPTS, ("mnist_cuda.py", "ddp_nccl.py", "timing_events.py"))):
    for n in names:
        with open(os.path.join(d, n), encoding="utf-8") as fh:
            SNIPPETS.append(fh.read())

TOKENS = ["cuda", '"cuda"', "'cuda:0'", ".cuda()", "torch.cuda.", "nccl", '"nccl"', "import torch\n",
          "from torch.cuda.amp import autocast\n", "f'cuda:{i}'", "(", ")", "[", "]", ":", "\n", "    ",
          "device", "=", "==", ".to(", "x", "def f(device='cuda'):\n", "#", '"""', "\\", "\x00", "é", "{", "}",
          "torch.float64", "os.environ['CUDA_VISIBLE_DEVICES']", "@triton.jit\n", "class A:\n", "lambda: 0"]

settings.register_profile("analysis", max_examples=int(os.environ.get("AC_HYPOTHESIS_EXAMPLES", "100")), deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("analysis")


def _check(text: str, kind="python"):
    r = FileResult(path="x.py", kind=kind)
    _analyse_bytes("x.py", kind, text.encode("utf-8", "surrogatepass"), ScanOptions(), r)
    for f in r.findings:
        assert f.line >= 1 and f.col >= 1 and f.end_line >= f.line
    return r


def _mutate(src: str, data) -> str:
    lines = src.split("\n")
    for _ in range(data.draw(st.integers(0, 4))):
        op = data.draw(st.sampled_from(["del", "dup", "tok", "cut"]))
        i = data.draw(st.integers(0, max(0, len(lines) - 1)))
        if op == "del" and lines:
            del lines[i]
        elif op == "dup" and lines:
            lines.insert(i, lines[i])
        elif op == "tok":
            lines.insert(i, "".join(data.draw(st.lists(st.sampled_from(TOKENS), max_size=6))))
        elif op == "cut" and lines:
            lines[i] = lines[i][: data.draw(st.integers(0, len(lines[i])))]
    return "\n".join(lines)


@given(st.text(max_size=300))
def test_check_never_crashes_on_text(text):
    _check(text)
    _check(text, "notebook")
    _check(text, "cmake")
    _check(text, "cuda-source")


@given(st.lists(st.sampled_from(TOKENS), max_size=40))
def test_check_never_crashes_on_token_soup(tokens):
    _check("".join(tokens))


@given(st.data())
def test_check_and_migrate_on_mutated_real_code(data):
    src = _mutate(data.draw(st.sampled_from(SNIPPETS)), data)
    _check(src)
    try:
        r = migrate_source(src, annotate=data.draw(st.booleans()))
    except MigrateError as exc:
        if not any(reason in str(exc) for reason in ("libcst does not reproduce", "libcst cannot parse")):
            # else: Python reads it but libcst cannot: left untouched, with the reason
            with pytest.raises((SyntaxError, ValueError)):
                ast.parse(src)
        return
    ast.parse(r.code)
    assert migrate_source(r.code).code == r.code  # idempotent


@given(st.lists(st.sampled_from(TOKENS), max_size=30))
def test_migrate_never_crashes_and_output_parses(tokens):
    src = "".join(tokens)
    try:
        r = migrate_source(src)
    except MigrateError:
        return
    ast.parse(r.code)


def test_a_file_python_reads_but_libcst_cannot_is_refused_with_that_reason():
    # a lone continuation line: CPython accepts it, libcst does not
    src = "import torch\nif True:\n    \\\n    x = torch.ones(1).cuda()\n"
    ast.parse(src)
    with pytest.raises(MigrateError, match="libcst cannot parse it \\(Python can; left untouched\\)"):
        migrate_source(src)
