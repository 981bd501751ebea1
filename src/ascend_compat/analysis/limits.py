"""Bounds on the user code ``check`` and ``migrate`` parse, so that no input crashes them with a
signal, keeps them busy for minutes or exhausts memory: at a bound the file gets one clear message.

* CPython's own parser (``ast``) bounds itself: brackets nest at most 200 deep, blocks 100, and a
  syntax tree deeper than about 3 x the recursion limit is refused (SyntaxError, RecursionError or
  MemoryError, never a crash).
* Our syntax-tree visitors recurse. They run with the normal recursion limit; a file too deep for
  it is analysed again by :func:`deep`, in a thread whose stack (:data:`STACK_BYTES`) holds the
  raised limit (:data:`DEEP_RECURSION_LIMIT`); what is deeper still is refused (:class:`TooComplex`).
* libcst, which ``migrate`` rewrites with, parses in native code without a depth check (a deeply
  nested input overflows the stack: SIGSEGV), and its time grows as nesting x size. So before
  libcst sees a statement, :func:`measure` (a tokenizer pass) takes its nesting and its work (the
  nesting past what ordinary code has, summed over its tokens), and :func:`check_rewritable`
  refuses more than :data:`MAX_NESTING` or :data:`MAX_STATEMENT_TOKENS` per statement, or
  :data:`MAX_WORK` per file; within them libcst runs under :func:`deep`. Its time per token is
  bounded by the file size limit of migrate.

``tests/analysis/test_limits.py`` drives every kind of nesting to these bounds and past them.
"""
from __future__ import annotations

import contextlib
import io
import sys
import threading
import token
import tokenize
from dataclasses import dataclass
from typing import Callable, TypeVar

T = TypeVar("T")

#: the stack of the thread :func:`deep` runs in (reserved address space; only what is used is backed)
STACK_BYTES = 512 << 20
#: the recursion limit while :func:`deep` runs (the C stack per Python frame stays far below 25 KB)
DEEP_RECURSION_LIMIT = 20_000
#: nesting (brackets, operators, trailers, blocks: an upper bound of a syntax tree's depth) past
#: which migrate does not rewrite a statement; the public files measured stay below 250 in 99.9 %
MAX_NESTING = 1_000
#: tokens of one statement past which migrate does not rewrite it: libcst holds 2-3 KB per token
#: (about 300 MB and 3 CPU-seconds at the limit); the largest code statements of torch, transformers
#: and DeepSpeed hold fewer (torch's op_db list, 660 KB: 73,000; a 430 KB test class: 52,000); only
#: data tables hold more (torch's _triton_ops_meta: 188,000)
MAX_STATEMENT_TOKENS = 100_000
#: nesting that costs libcst no more than plain size does (ordinary code stays below it)
_FREE_NESTING = 64
#: work (:class:`Shape`) of the statements migrate rewrites in one file past which it leaves the file
#: untouched: libcst's time grows with it beyond its time per token (14 statements nested 900 deep:
#: 2.7 CPU-seconds, 50 MB; benchmarks/bench_analysis_limits.py measures it)
MAX_WORK = 10_000_000

_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")
_KEYWORD_OPS = frozenset({"and", "or", "not", "if", "else", "lambda", "await", "in", "is", "for", "async",
                          "yield", "from"})
#: syntax-tree levels a block (if/for/def/class/with/try and its body) adds
_BLOCK_WEIGHT = 4
_FSTRING_START = getattr(token, "FSTRING_START", None)
_FSTRING_END = getattr(token, "FSTRING_END", None)


#: the message of a file deeper than even :func:`deep` analyses
TOO_DEEP = (f"nested too deeply to analyse (its syntax tree needs more than the recursion limit of "
            f"{DEEP_RECURSION_LIMIT})")
#: the message of a file CPython's parser refuses as too complex (it says so with a bare MemoryError)
TOO_COMPLEX_TO_PARSE = ("too complex for Python's parser (nested too deeply, or out of memory): "
                        "Python itself could not run it")


class TooComplex(ValueError):
    """The input is past a bound of this module (the message says which, where, and the bound)."""


@dataclass(frozen=True)
class Shape:
    """What :func:`measure` found: the deepest nesting, its line (1-based), and the work: the
    nesting past ``_FREE_NESTING`` summed over the tokens (0 for ordinary code)."""

    nesting: int = 0
    line: int = 0
    work: int = 0
    tokens: int = 0


def measure(text: str, first_line: int = 1) -> Shape:
    """Nesting and work of Python source ``text`` from its tokens, without parsing it.

    The nesting at a token counts the brackets around it, every operator, trailer and operator-like
    keyword since the last comma of its bracket level (each may add a level to the syntax tree: a
    chain ``a + b + c`` or ``x.f().g`` is as deep as it is long, list items are side by side), and
    ``_BLOCK_WEIGHT`` per enclosing block: an upper bound of the depth of the syntax tree at that
    token. Source that does not tokenize measures what was read before the error.
    """
    nesting, at, work, tokens = 0, first_line, 0, 0
    cur, bases = 0, [0]   # nesting now, and where it started at each open bracket
    indent = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            kind, s = tok.type, tok.string
            if kind == token.NEWLINE:
                cur, bases = 0, [0]
                continue
            if kind == token.INDENT:
                indent += 1
                continue
            if kind == token.DEDENT:
                indent -= 1
                continue
            if kind in (token.NL, token.COMMENT, token.ENDMARKER):
                continue
            if kind == token.OP and s in _OPEN or kind == _FSTRING_START:
                cur += 1
                bases.append(cur)
            elif kind == token.OP and s in _CLOSE or kind == _FSTRING_END:
                if len(bases) > 1:
                    bases.pop()
                cur += 1
            elif kind == token.OP and s in (",", ";"):
                cur = bases[-1]
            elif kind == token.OP or (kind == token.NAME and s in _KEYWORD_OPS):
                cur += 1
            elif kind == token.STRING:
                # adjacent strings concatenate into a nested node; an f-string holds expressions
                cur += 1 + (sum(1 for c in s if not (c.isalnum() or c.isspace())) if _is_fstring(s) else 0)
            tokens += 1
            level = cur + _BLOCK_WEIGHT * indent
            if level > _FREE_NESTING:
                work += level - _FREE_NESTING
            if level > nesting:
                nesting, at = level, tok.start[0] + first_line - 1
    except (tokenize.TokenError, SyntaxError):
        pass
    return Shape(nesting, at, work, tokens)


def _is_fstring(s: str) -> bool:
    head = s[:3].lower()
    return "f" in head[: len(head) - len(head.lstrip("rfbu"))] if head else False


def check_rewritable(text: str, first_line: int = 1, work_so_far: int = 0) -> Shape:
    """:func:`measure` ``text`` (a statement starting at ``first_line``, to be rewritten after others
    of ``work_so_far``); TooComplex past :data:`MAX_NESTING` or :data:`MAX_WORK`."""
    shape = measure(text, first_line)
    if shape.nesting > MAX_NESTING:
        raise TooComplex(f"nested {shape.nesting} levels deep at line {shape.line} (the rewrite limit is "
                         f"{MAX_NESTING}): left untouched")
    if shape.tokens > MAX_STATEMENT_TOKENS:
        raise TooComplex(f"the statement at line {first_line} is too large to rewrite ({shape.tokens} tokens, "
                         f"the limit is {MAX_STATEMENT_TOKENS}): left untouched; split it")
    if work_so_far + shape.work > MAX_WORK:
        raise TooComplex(f"the statements to rewrite are too deeply nested to rewrite in bounded time (by line "
                         f"{shape.line}: {work_so_far + shape.work:.2g} units of work, the limit is "
                         f"{MAX_WORK:.0e}): left untouched; simplify or split them")
    return shape


_DEEP = threading.local()
_DEEP_LOCK = threading.Lock()


def in_deep() -> bool:
    """Whether the caller runs under :func:`deep` (so a RecursionError is final)."""
    return getattr(_DEEP, "active", False)


@contextlib.contextmanager
def parser_limit():
    """Around ``ast.parse``: under :func:`deep`, the normal recursion limit again, so that CPython's
    parser refuses what it always refuses (a tree deeper than about 3 x that limit) and the raised
    limit only serves the visitors walking what it accepted."""
    normal = getattr(_DEEP, "normal_limit", None)
    if normal is None or not in_deep():
        yield
        return
    sys.setrecursionlimit(normal)
    try:
        yield
    finally:
        sys.setrecursionlimit(DEEP_RECURSION_LIMIT)


def deep(fn: Callable[..., T], *args, **kwargs) -> T:
    """``fn(*args, **kwargs)`` in a thread with a :data:`STACK_BYTES` stack and the recursion limit
    raised to :data:`DEEP_RECURSION_LIMIT`; its result, or its exception re-raised here.

    One such call runs at a time (the recursion limit is the interpreter's); nested calls run inline.
    """
    if in_deep():
        return fn(*args, **kwargs)
    box: dict = {}
    old_limit = sys.getrecursionlimit()

    def run() -> None:
        _DEEP.active = True
        _DEEP.normal_limit = old_limit
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    with _DEEP_LOCK:
        old_size = threading.stack_size()
        try:
            threading.stack_size(STACK_BYTES)
            sys.setrecursionlimit(max(old_limit, DEEP_RECURSION_LIMIT))
            worker = threading.Thread(target=run, name="ascend-compat-deep", daemon=True)
            try:
                worker.start()
            except RuntimeError:  # no room for such a stack: run here, within the normal limit
                sys.setrecursionlimit(old_limit)
                worker = None
            threading.stack_size(old_size)
            if worker is None:
                return fn(*args, **kwargs)
            worker.join()
        finally:
            threading.stack_size(old_size)
            sys.setrecursionlimit(old_limit)
    if "error" in box:
        raise box["error"]
    return box["value"]
