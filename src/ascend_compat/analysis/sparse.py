"""A sparse copy of a source file: every statement that holds no hot position blanked out, at any depth.

The visitor skips every statement whose lines hold no trigger (``PyAnalyzer.hot``), so parsing those
statements is wasted work; on CUDA-heavy trees most of a relevant file's lines are such statements
inside functions that hold a trigger elsewhere. :func:`blank_cold` finds statement boundaries from
the text (indentation, bracket balance, backslash continuations, triple quotes), replaces each run of
consecutive cold statements of a body by one placeholder statement ``0`` on the run's first line and
blank lines (line numbers and the columns of every kept line unchanged), and keeps everything else.

Boundaries found from the text can be wrong (a continuation line inside brackets at the body's
indentation, a line inside a string); a wrong cut either does not parse or leaves a placeholder that
is not a statement. The caller parses the sparse text, lets the visitor walk it, and accepts the
result only when every placeholder was visited as a skipped statement of its own (:meth:`Sparse.verified`);
otherwise it analyses the whole file. What is kept is exactly what the visitor visits in the whole
file, so the findings are the same.
"""
from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

#: the end of a line that closes a compound statement's header (``:`` and maybe a comment)
_COLON_END = re.compile(r":[ \t]*(?:#[^\n]*)?\r?\n")
#: the first line of code (not blank, not a comment) and its indentation
_CODE_LINE = re.compile(r"^([ \t]*)(?=[^\s#])", re.M)
#: a header looks at most this many lines ahead for the ``:`` that ends it (``def f(\n a,\n b,\n):``)
_MAX_HEADER_LINES = 40
_MATCH = re.compile(r"match\b(?![ \t]*[=.,:)\]])")
#: a clause of the compound statement before it, at the statement's indentation
_CLAUSE = re.compile(r"(?:else|elif|except|finally)\b")
#: how a compound statement starts (a decorator, a keyword); a statement starting otherwise has no block
_COMPOUND = re.compile(r"@|(?:async|def|class|if|for|while|with|try|match)\b")
_ALTERNATIVES = r"(?!(?:else|elif|except|finally)\b)"
_STARTS: Dict[str, "re.Pattern"] = {}
_CLAUSES: Dict[str, "re.Pattern"] = {}


def _starts_rx(indent: str) -> "re.Pattern":
    """The newline before a statement that starts at exactly ``indent`` (not a clause of the one before)."""
    rx = _STARTS.get(indent)
    if rx is None:
        rx = _STARTS[indent] = re.compile(r"\n%s(?=[^\s#)\]}'\"])%s" % (re.escape(indent), _ALTERNATIVES))
    return rx


def _clauses_rx(indent: str) -> "re.Pattern":
    """The newline before any code line at exactly ``indent`` (``else:``, ``except ...:``, a closing bracket)."""
    rx = _CLAUSES.get(indent)
    if rx is None:
        rx = _CLAUSES[indent] = re.compile(r"\n%s(?=[^\s#])" % re.escape(indent))
    return rx


def _balance(text: str, a: int, b: int) -> int:
    """Opening minus closing brackets in text[a:b] (strings and comments included: an estimate)."""
    return (text.count("(", a, b) + text.count("[", a, b) + text.count("{", a, b)
            - text.count(")", a, b) - text.count("]", a, b) - text.count("}", a, b))


#: how the last code line before a statement cannot end (the statement would continue it)
_OPEN_ENDS = tuple("([{,\\+-*/%&|^<>=")


def _open_before(text: str, lo: int, at: int) -> bool:
    """Whether the last code line before offset ``at`` (a line start; not before ``lo``) leaves the statement open:
    it ends with an opening bracket, a comma, an operator or a backslash (comment lines are passed over)."""
    end = at
    while end > lo:
        start = text.rfind("\n", lo, end - 1) + 1
        line = text[max(start, lo):end].strip()
        if line and not line.startswith("#"):
            hash_at = line.find("#")
            if hash_at != -1 and "'" not in line and '"' not in line:
                line = line[:hash_at].rstrip()
            if line.endswith("*") and line[:-1].rstrip().endswith("import"):
                return False  # from m import *
            return line.endswith(_OPEN_ENDS)
        if start <= lo:
            return False
        end = start
    return False


_TRIPLE = re.compile(r"'''|\"\"\"")
#: a comment or a one-line string (what can hold a triple quote that opens nothing)
_SHORT = re.compile(r"#[^\n]*|'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")


def triple_strings(text: str) -> Optional[Tuple[List[int], List[int]]]:
    """(starts, ends) of the triple-quoted strings of ``text`` that span lines, in order; None if one is not closed."""
    starts: List[int] = []
    ends: List[int] = []
    i = 0
    while True:
        m = _TRIPLE.search(text, i)
        if m is None:
            return starts, ends
        p = m.start()
        j = max(text.rfind("\n", 0, p) + 1, i)
        while True:  # a comment or a one-line string before it on its line may hold it
            t = _SHORT.search(text, j)
            if t is None or t.start() >= p or t.end() > p:
                break
            j = t.end()
        if t is not None and t.start() < p < t.end():
            i = t.end()
            continue
        q = m.group()
        k = p + 3
        while True:
            c = text.find(q, k)
            if c == -1:
                return None
            bs = 0
            while text[c - 1 - bs] == "\\":
                bs += 1
            if bs % 2 == 0:
                break
            k = c + 1
        if text.find("\n", p, c) != -1:  # (only a string over several lines holds line starts)
            starts.append(p)
            ends.append(c + 3)
        i = c + 3


@dataclass
class Sparse:
    """The sparse text, the lines of its placeholders and the (first, last) lines blanked."""
    text: str
    placeholders: List[int] = field(default_factory=list)
    blanked: List[Tuple[int, int]] = field(default_factory=list)

    def verified(self, tree: ast.AST) -> bool:
        """Whether every placeholder is a statement of its own in ``tree`` (the parse of :attr:`text`): a
        cut inside brackets or a string leaves one inside an expression or a string (or does not parse)."""
        want = set(self.placeholders)
        blocks = [tree.body]
        while blocks and want:
            for s in blocks.pop():
                t = type(s)
                if t is ast.Expr:
                    v = s.value
                    if type(v) is ast.Constant and v.value == 0 and type(v.value) is int:
                        want.discard(s.lineno)
                    continue
                for name in ("body", "orelse", "finalbody"):
                    b = getattr(s, name, None)
                    if type(b) is list and b:
                        blocks.append(b)
                for h in getattr(s, "handlers", ()):
                    blocks.append(h.body)
                for c in getattr(s, "cases", ()):
                    blocks.append(c.body)
        return not want


class _Cutter:
    def __init__(self, text: str, positions: Sequence[int], strings: Tuple[List[int], List[int]]):
        self.text = text
        self.pos = positions
        self.str_starts, self.str_ends = strings
        self.edits: List[Tuple[int, int, str]] = []  # (start, end, indentation of the placeholder)

    def in_string(self, at: int) -> bool:
        """Whether offset ``at`` is inside a multi-line string."""
        k = bisect.bisect_right(self.str_starts, at) - 1
        return k >= 0 and self.str_ends[k] > at

    def header_end(self, s: int, e: int, indent: str) -> int:
        """Offset after the header of the compound statement at ``s`` whose body starts on the next line; -1 if
        the statement at ``s`` is not one (a simple statement, or ``if x: y`` on one line)."""
        text = self.text
        bal = 0
        i = s
        decorating = text.startswith("@", s + len(indent))  # decorators come before a def's header
        for _ in range(_MAX_HEADER_LINES):
            nl = text.find("\n", i, e)
            if nl == -1:
                return -1
            bal += _balance(text, i, nl)
            if bal < 0:
                return -1
            if bal == 0:
                if decorating:
                    decorating = text.startswith("@", nl + 1 + len(indent))
                    i = nl + 1
                    continue
                m = _COLON_END.search(text, i, nl + 1)
                return nl + 1 if m is not None and m.end() == nl + 1 else -1
            i = nl + 1
        return -1

    def statement(self, s: int, e: int, indent: str) -> None:
        """Blank the cold statements inside the hot statement [s, e) (which starts at ``indent``), if it is a
        compound statement whose structure the text shows; otherwise keep it whole."""
        if not _COMPOUND.match(self.text, s + len(indent)):
            return  # a simple statement over several lines (brackets, a backslash): nothing to cut in it
        he = self.header_end(s, e, indent)
        if he == -1 or _MATCH.match(self.text, s + len(indent)):
            return  # (a match statement's blocks are its case clauses, which cannot be blanked)
        mark = len(self.edits)
        bodies = []
        start = he
        for m in _clauses_rx(indent).finditer(self.text, he - 1, e):
            c = m.start() + 1
            if self.in_string(c):
                continue  # (a line of a multi-line string that looks like ``examples:``)
            if not _CLAUSE.match(self.text, c + len(indent)):
                del self.edits[mark:]
                return  # a closing bracket at the statement's indentation, ...: kept whole
            che = self.header_end(c, e, indent)
            if che == -1:
                del self.edits[mark:]
                return
            bodies.append((start, c))
            start = che
        bodies.append((start, e))
        for a, b in bodies:
            if not self.body(a, b, indent):
                del self.edits[mark:]
                return

    def body(self, a: int, b: int, outer: Optional[str]) -> bool:
        """Blank the cold statements of the block [a, b) (deeper than ``outer``; None: the module). False if
        its statements cannot be told apart from the text."""
        text = self.text
        m = _CODE_LINE.search(text, a, b)
        if m is None:
            return False
        ind = m.group(1)
        if outer is not None and (len(ind) <= len(outer) or not ind.startswith(outer)):
            return False
        first = m.start()
        starts = [first] + [x.start() + 1 for x in _starts_rx(ind).finditer(text, first, b)]
        ss, se = self.str_starts, self.str_ends
        lo, hi = bisect.bisect_right(se, first), bisect.bisect_left(ss, b)
        if lo < hi:  # a line inside a string starts nothing
            out: List[int] = []
            prev = 0
            for i in range(lo, hi):
                x = bisect.bisect_right(starts, ss[i], prev)
                out.extend(starts[prev:x])
                prev = max(x, bisect.bisect_left(starts, se[i], x))
            out.extend(starts[prev:])
            starts = out
        if not starts:
            return False  # (its first code line is in a string: the block is not what the text seems to show)
        width = len(ind)
        while True:
            n = len(starts)
            kept = self._kept(starts, first, b, width)
            order = sorted(kept)
            # cut points: where a run of cold statements starts or ends; each must be a true statement boundary
            cuts = [k for k in order if k > 0 and k - 1 not in kept]
            cuts += [k + 1 for k in order if k + 1 < n and k + 1 not in kept]
            bad = next((k for k in cuts if _open_before(text, first, starts[k])), None)
            if bad is None:
                break
            del starts[bad]  # a continuation line, not a statement: it belongs to the one before
        if n - 1 not in kept and _open_before(text, first, b):
            return False  # the last run ends where the block does: what it cuts off must be closed there too
        prev = 0
        for k in order:
            if k > prev:
                self.edits.append((starts[prev], starts[k], ind))
            self.recurse(k, starts, b, ind)
            prev = k + 1
        if prev < n:
            self.edits.append((starts[prev], b, ind))
        return True

    def _kept(self, starts: List[int], first: int, b: int, width: int) -> set:
        """Indexes of the statements (starting at ``starts``) that hold a position; a decorator belongs to what
        it decorates."""
        text, n = self.text, len(starts)
        kept = set()
        for p in self.pos[bisect.bisect_left(self.pos, first):bisect.bisect_left(self.pos, b)]:
            kept.add(bisect.bisect_right(starts, p) - 1)
        for k in sorted(kept):
            j = k
            while j + 1 < n and text.startswith("@", starts[j] + width):
                j += 1
                kept.add(j)
            j = k
            while j > 0 and text.startswith("@", starts[j - 1] + width):
                j -= 1
                kept.add(j)
        return kept

    def recurse(self, k: int, starts: List[int], b: int, ind: str) -> None:
        s = starts[k]
        e = starts[k + 1] if k + 1 < len(starts) else b
        if self.text.find("\n", s, e - 1) != -1:  # (a one-line statement has no block to cut)
            self.statement(s, e, ind)


def blank_cold(text: str, positions: Sequence[int], strings: Optional[tuple] = None) -> Optional[Sparse]:
    """The sparse copy of ``text`` keeping the statements that hold one of the sorted offsets ``positions``
    (and the headers of the statements around them); None when nothing could be blanked. ``strings``: the
    text's :func:`triple_strings`, when known (an unclosed string is ``()``)."""
    strings = triple_strings(text) if strings is None else strings
    if not strings:
        return None
    cut = _Cutter(text, positions, strings)
    if not cut.body(0, len(text), None) or not cut.edits:
        return None
    edits = sorted(cut.edits)
    out = []
    sparse = Sparse("")
    prev = 0
    line = 1
    for a, b, ind in edits:
        out.append(text[prev:a])
        line += text.count("\n", prev, a)
        nls = text.count("\n", a, b)
        out.append(ind + "0" + "\n" * nls)
        sparse.placeholders.append(line)
        last = line + nls - (1 if b > a and text[b - 1] == "\n" else 0)
        sparse.blanked.append((line, max(line, last)))
        line += nls
        prev = b
    out.append(text[prev:])
    sparse.text = "".join(out)
    return sparse


def reparse(new: str, old: str, old_tree: ast.Module, parse: Callable[[str], ast.Module]) -> ast.Module:
    """The tree ``parse(new)`` gives, where ``new`` and ``old`` are sparse copies of one file (a later round keeps
    more statements) and ``old_tree`` is ``parse(old)``: the top-level statements of ``old_tree`` whose lines
    (up to the next top-level statement) did not change are reused, and each run of the others is parsed on
    its own at its own line numbers (blank lines before it). A run starts and ends where a top-level statement
    does in both copies (un-blanking restores statements at the places of the placeholders), so it parses as it
    does inside the whole text."""
    new_lines = new.splitlines(keepends=True)
    old_lines = old.splitlines(keepends=True)
    body = old_tree.body
    if len(new_lines) != len(old_lines) or not body:
        return parse(new)
    firsts = [_first_line(s) for s in body] + [len(new_lines) + 1]
    changed = [i + 1 for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b]
    if not changed:
        return old_tree
    if changed[0] < firsts[0]:
        return parse(new)
    dirty = set()
    for line in changed:
        dirty.add(bisect.bisect_right(firsts, line) - 1)
    out: List[ast.stmt] = []
    k, n = 0, len(body)
    while k < n:
        if k not in dirty:
            out.append(body[k])
            k += 1
            continue
        j = k
        while j + 1 < n and j + 1 in dirty:
            j += 1
        lo, hi = firsts[k], firsts[j + 1]  # the run's lines: [lo, hi)
        out.extend(parse("\n" * (lo - 1) + "".join(new_lines[lo - 1:hi - 1])).body)
        k = j + 1
    return ast.Module(body=out, type_ignores=[])


def _first_line(stmt: ast.stmt) -> int:
    """The first line of a top-level statement, its decorators included."""
    decorators = getattr(stmt, "decorator_list", None)
    return decorators[0].lineno if decorators else stmt.lineno
