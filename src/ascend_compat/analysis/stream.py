"""Python files too large to parse at once, analysed in windows of whole statements (``check``).

A syntax tree takes about 140 bytes per byte of source: a 50 MB file parsed whole needs 7 GB. Over
:data:`STREAM_BYTES` the scanner hands the file to :class:`Stream`, which parses, analyses and drops
one window at a time, so memory follows the window (and the largest statement), not the file.
``tests/analysis/test_scan_memory.py`` checks that the windows give the findings of a whole-file
analysis, and that 50 MB stay under 1 GB.
"""
from __future__ import annotations

import bisect
from typing import Callable, List, Optional, Tuple

from ascend_compat.analysis import limits


def _line_numbers(text: str, offsets: List[int]) -> List[int]:
    """1-based line numbers of sorted offsets."""
    out, line, prev = [], 1, 0
    for p in offsets:
        line += text.count("\n", prev, p)
        prev = p
        out.append(line)
    return out


#: Python text larger than this is analysed in windows (:class:`Stream`), so that check's memory
#: follows the window and not the file (a syntax tree takes about 140 bytes per byte of source)
STREAM_BYTES = 2 << 20
#: source parsed at once in a window (statements are never cut: a larger statement is its own window)
WINDOW_BYTES = 256 << 10
#: a statement (or class member) larger than this is not parsed in a window: the file is analysed
#: without it and says so (the largest statements of torch, transformers and DeepSpeed are < 700 KB)
MAX_STATEMENT_BYTES = 2 << 20
#: windows that fail to parse are widened or reparsed; all parsing stops at this many times the text
PARSE_BUDGET = 3


class PartialAnalysis(SyntaxError):
    """Some statements of a large file could not be analysed: ``findings`` are those of the rest,
    ``kind`` says why (``parse-error`` or ``too-complex``)."""

    def __init__(self, message: str, lineno: int, kind: str, findings: list):
        super().__init__(message)
        self.msg, self.lineno, self.kind, self.findings = message, lineno, kind, findings


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.1f} KB"


def finished(stream: Optional["Stream"], findings: list) -> list:
    """``findings``, or PartialAnalysis carrying them when ``stream`` met statements it could not parse."""
    if stream is not None and stream.problem is not None:
        kind, line, message = stream.problem
        raise PartialAnalysis(message, line, kind, findings)
    return findings


class Stream:
    """A large file analysed window by window: each window, a run of whole top-level statements (or
    members of a large class, parsed inside ``if 1:`` so positions stay the file's) of up to
    ``WINDOW_BYTES``, is parsed, fed to the analyzer and dropped; a window holding no trigger word
    is not parsed at all. The statement boundaries come from the scanner (a line starting at
    column 0: a guess); a window that does not parse (a boundary that was none, or a syntax error) is
    widened over the neighbouring statements not fed yet, then has the lines Python reports blanked
    (as the scanner does for small files, up to ``max_blanked`` lines), within ``PARSE_BUDGET``. What
    is never parsed is recorded in :attr:`problem` (the first such problem) and the analysis goes on.

    The scanner hands in its statement boundaries (``spans``), its parser (``parse(text, path)``: a
    syntax tree, SyntaxError, or limits.TooComplex) and its class splitter (``members(text, start,
    end)``: the member statements of a class, header first, or None).
    """

    def __init__(self, path: str, text: str, spans: List[Tuple[int, int]], parse: Callable, members: Callable,
                 max_blanked: int):
        self.path, self.text = path, text
        self.parse, self.max_blanked = parse, max_blanked
        cuts: List[Tuple[int, bool]] = []
        for a, b in spans:
            cuts.append((a, False))
            split = members(text, a, b) if b - a > WINDOW_BYTES else None
            cuts.extend((m, True) for m, _ in (split or [])[1:])
        self.starts = [c for c, _ in cuts]
        self.inside = [i for _, i in cuts]  # the cut is a class member: parsed inside "if 1:"
        self.ends = self.starts[1:] + [len(text)]
        self.lines = _line_numbers(text, self.starts)
        self.problem: Optional[Tuple[str, int, str]] = None

    def feed(self, analyzer, positions: Optional[List[int]]) -> None:
        """Feed ``analyzer`` every window holding one of ``positions`` (None: every window)."""
        n, k, fed = len(self.starts), 0, 0  # fed: cuts before it were parsed (no widening back there)
        self.budget = PARSE_BUDGET * len(self.text) + MAX_STATEMENT_BYTES
        while k < n:
            m = k + 1
            while m < n and self.ends[m] - self.starts[k] <= WINDOW_BYTES:
                m += 1
            a, b = self.starts[k], self.ends[m - 1]
            if positions is not None and bisect.bisect_left(positions, a) == bisect.bisect_left(positions, b):
                analyzer.skipped.append((self.lines[k], self._last_line(m)))
                k = m
                continue
            k, m = self._parse_window(analyzer, max(fed, 0), k, m)
            fed = k = m

    def _last_line(self, m: int) -> int:
        return self.lines[m] - 1 if m < len(self.lines) else self.text.count("\n", self.starts[-1]) + self.lines[-1]

    def _parse_window(self, analyzer, fed: int, k: int, m: int) -> Tuple[int, int]:
        """Parse cuts [k, m) (widened if need be) into ``analyzer``; the range of cuts consumed."""
        blanked: set = set()
        step = 1
        while True:
            size = self.ends[m - 1] - self.starts[k]
            if size > MAX_STATEMENT_BYTES:
                self._note("too-complex", self.lines[k], f"the statement at line {self.lines[k]} is "
                           f"{_size(size)}, over the {_size(MAX_STATEMENT_BYTES)} one statement may have")
                return k, m
            if self.budget < size:
                self._note("parse-error", self.lines[k], f"lines {self.lines[k]}-{self._last_line(m)} do not parse")
                return k, m
            self.budget -= size
            try:
                tree = self.parse(self._source(k, m, blanked), self.path)
            except limits.TooComplex as exc:
                self._note("too-complex", self.lines[k], f"at line {self.lines[k]}: {exc}")
                return k, m
            except (SyntaxError, ValueError) as exc:
                line = getattr(exc, "lineno", None) or self.lines[k]
                wk, wm = max(fed, k - step), min(len(self.starts), m + step)
                if (wk, wm) != (k, m) and not blanked and self.ends[wm - 1] - self.starts[wk] <= MAX_STATEMENT_BYTES:
                    k, m = wk, wm
                    step *= 2
                    continue
                if self.lines[k] <= line <= self._last_line(m) and len(blanked) < self.max_blanked \
                        and line not in blanked:
                    self._note("parse-error", line, f"syntax error at line {line}: {getattr(exc, 'msg', exc)}")
                    blanked.add(line)
                    continue
                self._note("parse-error", line, f"syntax error at line {line}: {getattr(exc, 'msg', exc)}")
                return k, m
            analyzer.feed(tree)
            return k, m

    def _source(self, k: int, m: int, blanked: set) -> str:
        """Cuts [k, m) as a module whose line numbers are the file's."""
        line = self.lines[k]
        body = self.text[self.starts[k]:self.ends[m - 1]]
        if blanked:
            rows = body.split("\n")
            for ln in blanked:
                if 0 <= ln - line < len(rows):
                    rows[ln - line] = ""
            body = "\n".join(rows)
        if self.inside[k]:
            return "\n" * (line - 2) + "if 1:\n" + body
        return "\n" * (line - 1) + body

    def _note(self, kind: str, line: int, message: str) -> None:
        if self.problem is None:
            self.problem = (kind, line, message)
