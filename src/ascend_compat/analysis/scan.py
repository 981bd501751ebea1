"""Analyse files for CUDA references: one file (:func:`scan_file`) or many in parallel (:func:`scan_paths`).

Speed comes from not parsing or visiting what cannot matter, never from guessing:

1. trigger words (:data:`KEYWORDS`, plus integer-device patterns and import lines) are located
   with ``str.find``; a file with none of them, and no import of a listed library or renamed torch
   module, cannot produce a finding (every rule needs one of them in the text) and is not parsed;
2. otherwise only the statements holding a trigger are parsed, at any depth: the others are blanked
   out of a copy of the text (:mod:`ascend_compat.analysis.sparse`; positions unchanged), which is
   what the visitor skips anyway (statements containing no trigger line). Names bound on trigger
   lines whose uses can matter elsewhere (``tc`` for ``torch.cuda``, variables holding device
   strings) become further trigger words; if such a name occurs in something skipped, the file is
   analysed again with it. A sparse copy that does not parse, or whose cuts the parse shows to be
   wrong, means the whole file is parsed. Tests check that this gives exactly the findings of a
   whole-file analysis;
3. files are spread over a process pool (every core), and an optional content-hash cache
   (``--cache``) skips unchanged files on the next run.

Per-file problems (undecodable, too large, unreadable, syntax errors) become a
:class:`~ascend_compat.analysis.findings.FileResult` with ``error`` set; they never stop a run.
"""
from __future__ import annotations

import ast
import bisect
import gc
import hashlib
import json
import os
import re
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ascend_compat.analysis import limits
from ascend_compat.analysis import sparse as _sparse
from ascend_compat.analysis import stream as _stream
from ascend_compat.analysis.discover import Target, discover
from ascend_compat.analysis.findings import FileResult, Finding, internal_error
from ascend_compat.analysis.rules.registry import default as _rules

#: bump when the analysis changes so cached results are not reused
ANALYZER_VERSION = "6"
DEFAULT_MAX_BYTES = 10 * 1024 * 1024

#: lower-case words: a file containing none of them (and no import of a listed library or renamed
#: torch module) cannot produce a finding. The union of the rules' TRIGGERS: every rule's
#: detection needs one of them in the text.
KEYWORDS = _rules().triggers
#: trigger patterns of the rules (integer device ordinals), each searched on its own: a pattern that
#: starts with a literal is found by the regex engine's fast prefix scan, an alternation is not
_EXTRA = _rules().trigger_patterns
_TRIGGER_IMPORTS = _rules().trigger_imports
#: string-literal prefixes (nvcc options, tool names), found right after a quote by one regex (quotes unified)
_STRINGS = re.compile('"(?:' + "|".join(re.escape(p) for p in sorted(
    {p for ps in _rules().trigger_strings.values() for p in ps}, key=len, reverse=True)) + ")") \
    if _rules().trigger_strings else None
#: ``torch =`` (the name rebound; the look-behind after the literal keeps the regex engine's fast literal scan)
_TORCH_REBIND = re.compile(r"torch(?<!\wtorch)[ \t]*=(?!=)")
_IMPORT_LINE = re.compile(r"[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import\b|import[ \t]+([\w.]+)(.*))")
#: the newline before a top-level statement (a regex starting with a literal is scanned fast)
_BOUNDARY = re.compile(r"\n(?=[^\s#)\]}'\"])(?!(?:else|elif|except|finally)\b)")
#: rounds of one file's analysis with growing trigger names (a name bound from a name bound from a CUDA
#: value ...); the last round's result stands
MAX_NAME_ROUNDS = 8
#: shorter files are parsed whole (a syntax error anywhere in them is reported)
_SPARSE_MIN_LINES = 200


@dataclass
class ScanOptions:
    torch_npu_version: Optional[str] = None
    max_bytes: int = DEFAULT_MAX_BYTES
    cache_dir: Optional[str] = None
    #: resolve what the checked files tell each other (:mod:`ascend_compat.analysis.project`) in scan_targets
    project: bool = True
    #: the project's facts, set for the second pass (:class:`~ascend_compat.analysis.project.ProjectFacts`)
    project_facts: Optional[object] = None
    #: for a later pass: path -> the names the file's earlier pass followed (``FileFacts.followed``), the
    #: trigger words its first round starts with (the findings do not depend on them, only the rounds do)
    followed: Optional[dict] = None
    #: let an internal error propagate (``--debug``) instead of reporting it as the file's error
    debug: bool = False


# ------------------------------------------------------------------------------ decoding
def _decode(data: bytes) -> str:
    """Text of a source file: PEP 263 cookie / BOM honoured; UnicodeDecodeError if undecodable."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        import io
        import tokenize
        try:
            enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as exc:
            raise UnicodeDecodeError("utf-8", data, 0, 1, str(exc)) from None
        if enc.replace("-", "_").lower() in ("utf_8", "utf_8_sig"):
            raise
        return data.decode(enc)


# ------------------------------------------------------------------------------ python
#: how many lines a file with syntax errors may lose before its analysis is given up
MAX_BLANKED_LINES = 50


def _analyse_around_errors(path: str, text: str, opts) -> list:
    """Findings of a file that does not parse: each line a syntax error is reported at is blanked
    (line numbers kept) and the file parsed again, so one broken line does not hide the rest."""
    lines = text.splitlines(keepends=True)
    for _ in range(MAX_BLANKED_LINES):
        try:
            return _analyse_python(path, "".join(lines), opts)
        except SyntaxError as exc:
            index = min(max((exc.lineno or 1) - 1, 0), len(lines) - 1)
            if index < 0 or lines[index] in ("\n", ""):
                return []
            lines[index] = "\n"
        except (ValueError, MemoryError):
            return []
    return []


def _parse(text: str, what: str):
    """The syntax tree of user code; TooComplex where CPython's parser refuses its depth (see :mod:`limits`)."""
    with warnings.catch_warnings(), limits.parser_limit():
        warnings.simplefilter("ignore")  # SyntaxWarning for invalid escapes etc.
        try:
            return ast.parse(text, what)
        except (RecursionError, MemoryError):  # "too complex" comes as a MemoryError without a message
            raise limits.TooComplex(limits.TOO_COMPLEX_TO_PARSE) from None


def _outside_strings(text: str, start: int, offsets: List[int]) -> List[int]:
    """The offsets not inside a triple-quoted string opened after ``start`` (a boundary there is text)."""
    out = []
    dq = sq = 0
    prev = start
    for o in offsets:
        dq += text.count('"""', prev, o)
        sq += text.count("'''", prev, o)
        prev = o
        if dq % 2 == 0 and sq % 2 == 0:
            out.append(o)
    return out


def _chunks(text: str) -> List[Tuple[int, int]]:
    """(start, end) offsets of top-level statements (decorators stay with what they decorate)."""
    starts = _outside_strings(text, 0, [m.start() + 1 for m in _BOUNDARY.finditer(text)])
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    merged = []
    for s in starts:
        if merged and text.startswith("@", merged[-1]):
            continue  # decorator: extends to the decorated def/class
        merged.append(s)
    return [(s, merged[i + 1] if i + 1 < len(merged) else len(text)) for i, s in enumerate(merged)]


def _lines_of(text: str, positions: List[int]) -> List[int]:
    """Sorted, de-duplicated 1-based line numbers of sorted offsets."""
    out = []
    line, prev = 1, 0
    for p in positions:
        line += text.count("\n", prev, p)
        prev = p
        if not out or out[-1] != line:
            out.append(line)
    return out


def hot_positions(text: str, words=(), import_starts: Optional[List[int]] = None) -> Tuple[List[int], bool]:
    """Offsets of trigger words and import lines, and whether the file can have findings at all.

    ``words``: more trigger identifiers (the project facts' symbols, matched as whole identifiers);
    ``import_starts``: filled with the offsets of the import lines."""
    low = text.lower()
    pos = []
    for kw in KEYWORDS:
        i = low.find(kw)
        while i != -1:
            pos.append(i)
            i = low.find(kw, i + 1)
    for rx in _EXTRA:
        pos.extend(m.start() for m in rx.finditer(low))
    if _STRINGS is not None:  # (quotes unified: the same length, so offsets stay those of the text)
        pos.extend(m.start() for m in _STRINGS.finditer(low.replace("'", '"')))
    if words:
        pos.extend(_name_positions(text, words))
    relevant = bool(pos)
    # rebinding the name torch (torch = ...) changes what later lines resolve to
    pos.extend(m.start() for m in _TORCH_REBIND.finditer(text))
    starts, importing = _import_lines(text, judge=not relevant)
    pos.extend(starts)
    if import_starts is not None:
        import_starts.extend(starts)
    pos.sort()
    return pos, relevant or importing


def _import_lines(text: str, judge: bool = True) -> Tuple[List[int], bool]:
    """(offsets of the import lines, whether one imports a listed library or binds a followed torch name: the
    file is worth parsing for it); the latter only with ``judge``, else False."""
    starts: List[int] = []
    importing = False
    i = text.find("import")
    start = scanned = 0  # the line start is searched for only since the last occurrence (one long
    while i != -1:       # line of many "import" words made every search go back to its start)
        nl = text.rfind("\n", scanned, i)
        if nl != -1:
            start = nl + 1
        scanned = i
        m = _IMPORT_LINE.match(text, start)
        if m is not None and m.end() > i:
            starts.append(start)
            if judge and not importing:
                mod = m.group(1) or m.group(2)
                root = mod.split(".", 1)[0]
                if root in _TRIGGER_IMPORTS or (root == "torch" and _binds_tracked_torch_name(text, start)):
                    importing = True
        i = text.find("import", max(i + 6, m.end() if m is not None else 0))
    return starts, importing


def _binds_tracked_torch_name(text: str, start: int) -> bool:
    """Whether the torch import at ``start`` binds a name whose uses can be CUDA references holding no trigger
    word (``from torch import load``, ``import torch as t``, ``from torch import *``); ``from torch.utils.data
    import DataLoader`` binds none, so it does not make a file worth parsing by itself."""
    from ascend_compat.analysis.project import import_targets
    from ascend_compat.analysis.visitor import needs_tracking

    line_end = text.find("\n", start)
    line = text[start:line_end if line_end != -1 else len(text)]
    if " as " not in line and not line.lstrip().startswith("from"):
        return False  # ``import torch.x``: its uses spell out torch.x...
    star = "*" in line
    for target in import_targets(text, [start], "", False):
        if target.split(".", 1)[0] == "torch" and (star or needs_tracking(target)):
            return True
    return False


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


_WORD_RUN = re.compile(r"\w+")


def _name_positions(text: str, names) -> List[int]:
    """Sorted offsets where any of ``names`` occurs as a whole identifier."""
    out = [p for found in _occurrences(text, names).values() for p in found]
    out.sort()
    return out


#: up to this many names are searched for one by one (``str.find``, ~0.6 ns a character); more, by one pass over
#: the text's words (~17 ns a character: 30,000 names in 1.7 MB searched one by one took 44 s)
_FIND_EACH = 24


def _occurrences(text: str, names) -> Dict[str, List[int]]:
    """name -> sorted offsets where it occurs in ``text`` as a whole identifier, for each of ``names``."""
    out: Dict[str, List[int]] = {name: [] for name in names}
    if len(out) > _FIND_EACH:
        for m in _WORD_RUN.finditer(text):
            found = out.get(m.group())
            if found is not None:
                found.append(m.start())
        return out
    n = len(text)
    for name, found in out.items():
        k = len(name)
        i = text.find(name)
        while i != -1:
            if (i == 0 or not _is_word_char(text[i - 1])) and (i + k >= n or not _is_word_char(text[i + k])):
                found.append(i)
            i = text.find(name, i + k)
    return out


class _NameIndex:
    """Where names occur in one text, each name searched for once (a file analysed in rounds adds names)."""

    def __init__(self, text: str):
        self.text = text
        self._at: Dict[str, List[int]] = {}

    def positions(self, names) -> List[int]:
        """Sorted offsets of the whole-identifier occurrences of ``names``."""
        missing = [n for n in names if n not in self._at]
        if missing:
            self._at.update(_occurrences(self.text, missing))
        out = [p for n in names for p in self._at[n]]
        out.sort()
        return out


def _analyse_python(path: str, text: str, opts: ScanOptions, sink: Optional[dict] = None,
                    stream_over: Optional[int] = None):
    """Findings for Python source; SyntaxError propagates (only from a whole-file parse), or
    PartialAnalysis when a text of over ``stream_over`` characters (default ``stream.STREAM_BYTES``)
    analysed in windows had statements that do not parse.

    With ``sink`` (project mode), ``sink["facts"]`` receives the file's
    :class:`~ascend_compat.analysis.project.FileFacts`. With project facts (the second pass), the symbols its
    imports can reach are trigger words too; when it names none of them and the project gives none of its own
    definitions a meaning, ``sink["reused"]`` is set and nothing is analysed: the first pass's result stands."""
    from ascend_compat.analysis import project as _project

    facts = opts.project_facts
    module = _project.module_name(path) if sink is not None or facts is not None else None
    named: List[int] = []
    if facts is not None and sink is not None:  # a later pass: found from the import lines alone, before the
        lines, _ = _import_lines(text, judge=False)  # trigger words are searched for
        imports = _project.import_targets(text, lines, module, path.endswith("__init__.py"))
        names = facts.reachable(imports)
        named = _name_positions(text, names) if names else []
        if not named and module not in facts.back_modules():  # the facts cannot change the file
            sink["facts"] = _project.FileFacts(module=module, imports=imports)
            sink["reused"] = True
            return []
    starts: Optional[List[int]] = [] if sink is not None else None
    base, relevant = hot_positions(text, (), starts)
    if named:  # the symbols of other modules' facts the file names are trigger words too
        base = sorted(base + named)
        relevant = True
    bindings = None
    if sink is not None:
        bindings = _project.import_bindings(text, starts, module, path.endswith("__init__.py"))
        sink["facts"] = _project.FileFacts(module=module, imports=frozenset(q for q, _ in bindings))
    if not relevant:
        return []
    analyzer, stream = _analyse_relevant(path, text, opts, base, module, starts, stream_over, bindings)
    if sink is not None:
        sink["facts"] = _project.facts_of(analyzer, module, sink["facts"].imports)
    return _stream.finished(stream, analyzer.findings)


def _import_seeds(text: str, starts: Optional[List[int]], module: Optional[str], path: str,
                  bindings: Optional[set] = None, project=None) -> set:
    """Names the file's imports bind to something the analysis follows (``from torch.cuda import amp`` -> ``amp``,
    ``import triton`` -> ``triton``, with the project's facts ``project`` an alias of a fact's symbol): they are
    trigger words from the first round on, instead of being found by one more round. ``bindings``: the imports'
    :func:`~ascend_compat.analysis.project.import_bindings`, when known."""
    from ascend_compat.analysis.project import import_bindings
    from ascend_compat.analysis.visitor import follows_binding

    if bindings is None:
        if starts is None:
            starts = []
            hot_positions(text, (), starts)
        bindings = import_bindings(text, starts, module, path.endswith("__init__.py"))
    out = set()
    for qual, name in bindings:
        if name != "*" and (follows_binding(qual, name) or (project is not None and qual in project.symbols)):
            out.add(name)  # (the visitor's own test: a seed is a name the first round would follow anyway)
    return out


def _analyse_relevant(path: str, text: str, opts: ScanOptions, base: List[int], module: Optional[str],
                      starts: Optional[List[int]] = None, stream_over: Optional[int] = None,
                      bindings: Optional[set] = None):
    """(the finished analyzer, the :class:`stream.Stream` or None) of a file that can have findings (hot
    positions ``base``; ``starts``: the offsets of its import lines and ``bindings`` what they bind, when
    known). A text of over ``stream_over`` characters (default ``stream.STREAM_BYTES``) is analysed in windows."""
    from ascend_compat.analysis.visitor import PyAnalyzer

    def make(hot=None):
        return PyAnalyzer(path, text, opts.torch_npu_version, hot_lines=hot, module_name=module,
                          project=opts.project_facts)

    streaming = len(text) > (_stream.STREAM_BYTES if stream_over is None else stream_over)
    stream = _stream.Stream(path, text, _chunks(text), _parse, _members, MAX_BLANKED_LINES) if streaming else None
    seeds: set = _import_seeds(text, starts, module, path, bindings, opts.project_facts)
    if opts.followed:
        seeds |= opts.followed.get(path, frozenset())
    trees: dict = {}  # the whole file's tree, reused when a later round needs it again
    index = _NameIndex(text)
    for _ in range(MAX_NAME_ROUNDS):
        extra = index.positions(seeds)
        positions = sorted(base + extra) if extra else base
        hot = _lines_of(text, positions)
        analyzer = make(hot)
        if stream is not None:
            stream.feed(analyzer, positions)
        elif "full" in trees or text.count("\n") < _SPARSE_MIN_LINES or not _feed_sparse(path, text, positions,
                                                                                     analyzer, trees):
            analyzer = make(hot)
            if "full" not in trees:
                trees["full"] = _parse(text, path)
            analyzer.feed(trees["full"])
        if analyzer.star_imports and analyzer.hot is not None:
            # names a star import binds can be used anywhere without a trigger word: visit everything
            analyzer = make()
            if stream is not None:
                stream.feed(analyzer, None)
            else:
                analyzer.feed(_parse(text, path))
            analyzer.finish()
            return analyzer, stream
        new = analyzer.dynamic_names - seeds
        if not new or not _touches(analyzer.skipped, _lines_of(text, index.positions(new))):
            analyzer.finish()
            return analyzer, stream
        seeds |= new
    analyzer.finish()
    return analyzer, stream


def _touches(spans: List[Tuple[int, int]], lines: List[int]) -> bool:
    """Whether any line falls inside any (lo, hi) span."""
    if not spans or not lines:
        return False
    spans = sorted(spans)
    los = [lo for lo, _ in spans]
    his = []
    m = 0
    for _, hi in spans:
        m = max(m, hi)
        his.append(m)
    for ln in lines:
        k = bisect.bisect_right(los, ln) - 1
        if k >= 0 and his[k] >= ln:
            return True
    return False


def _members(text: str, s: int, e: int) -> Optional[List[Tuple[int, int]]]:
    """Member statements of a top-level class chunk as [(start, end)], header first; None = do not split."""
    if not text.startswith("class", s) or not text[s + 5:s + 6].isspace():  # not classification = [...]
        return None
    nl = text.find("\n", s, e)
    if nl == -1:
        return None
    m = re.compile(r"^([ \t]+)\S", re.M).search(text, nl + 1, e)
    if m is None:
        return None
    ind = re.escape(m.group(1))
    rx = re.compile(r"\n%s(?=[^\s#)\]}'\"])(?!(?:else|elif|except|finally)\b)" % ind)
    starts = _outside_strings(text, s, [x.start() + 1 for x in rx.finditer(text, nl, e)])
    merged: List[int] = []
    for st in starts:
        if merged and text.startswith("@", merged[-1] + len(m.group(1))):
            continue
        merged.append(st)
    if len(merged) < 2:
        return None
    bounds = [s] + merged + [e]
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]


def _feed_sparse(path: str, text: str, positions: List[int], analyzer, memo: dict) -> bool:
    """Parse and visit only the statements holding ``positions`` (:mod:`sparse`: the others blanked out at any
    depth, line and column numbers unchanged); False = parse the whole file instead. ``memo`` keeps the text's
    strings and this round's sparse copy and tree for the next round (which parses only what it un-blanks)."""
    if "strings" not in memo:
        memo["strings"] = _sparse.triple_strings(text) or ()
    sp = _sparse.blank_cold(text, positions, memo["strings"])
    if sp is None:
        return False
    try:
        if "sparse" in memo:
            tree = _sparse.reparse(sp.text, *memo["sparse"], lambda t: _parse(t, path))
        else:
            tree = _parse(sp.text, path)
    except (SyntaxError, ValueError):  # (too complex, too: the whole file's parse says so)
        return False
    if not sp.verified(tree):
        return False
    memo["sparse"] = (sp.text, tree)
    analyzer.skipped.extend(sp.blanked)
    analyzer.feed(tree)
    return True


def _notebook(path: str, text: str, opts: ScanOptions, result: FileResult) -> List[Finding]:
    from ascend_compat.analysis.visitor import PyAnalyzer, suppressions

    try:
        nb = json.loads(text)
    except RecursionError:
        raise ValueError("the notebook's JSON is nested too deeply to read") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ValueError("not a Jupyter notebook (no 'cells' list)")
    analyzer = PyAnalyzer(path, "", opts.torch_npu_version, None)
    errors = []
    supp = {}
    for idx, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        try:
            src = cell_source(cell)
        except ValueError as exc:
            errors.append(f"cell {idx}: {exc}; not analysed")
            continue
        code = sanitize_cell(src)
        result.lines += src.count("\n") + 1
        if code is None:
            continue
        analyzer.set_cell(idx, code)
        supp[idx] = suppressions(src)
        try:
            analyzer.feed(_parse(code, f"{path} cell {idx}"))
        except SyntaxError as exc:
            errors.append(f"cell {idx} line {exc.lineno}: syntax error: {exc.msg}")
        except ValueError as exc:  # NUL bytes, or limits.TooComplex
            errors.append(f"cell {idx}: {exc}")
    findings = analyzer.finish()
    if errors:
        result.error = "; ".join(errors)
        result.error_kind = "parse-error"
    kept = []
    for f in findings:
        if _suppressed(f, supp.get(f.cell, {})):
            result.suppressed += 1
        else:
            kept.append(f)
    return kept


def cell_source(cell: dict) -> str:
    """A notebook cell's source: a string or a list of strings (nbformat); ValueError for anything else."""
    src = cell.get("source", "")
    if isinstance(src, str):
        return src
    if isinstance(src, list) and all(isinstance(x, str) for x in src):
        return "".join(src)
    held = type(src).__name__ if not isinstance(src, list) else \
        "a list holding " + next(type(x).__name__ for x in src if not isinstance(x, str))
    raise ValueError(f"its source is not text ({held})")


_MAGIC_LINE = re.compile(r"^\s*[%!]|^\s*\w[\w.]*\?\??\s*$")
_SKIP_CELL_MAGIC = re.compile(r"%%(?!time\b|timeit\b|capture\b|prun\b)")


def sanitize_cell(src: str) -> Optional[str]:
    """Notebook cell code with IPython magics/shell lines blanked (line numbers kept); None = not Python."""
    if _SKIP_CELL_MAGIC.match(src.lstrip()):
        return None
    return "\n".join("" if _MAGIC_LINE.match(line) else line for line in src.split("\n"))


# ------------------------------------------------------------------------------ other kinds
def _other_kind(path: str, kind: str, text: str) -> List[Finding]:
    """Findings of a .cu/.cuh, CMake or C++ file: the rules' ``on_file`` hooks for that kind."""
    return [f for hook in _rules().file_hooks.get(kind, ()) for f in hook(path, kind, text)]


def _suppressed(f: Finding, supp) -> bool:
    for line in (f.line, f.end_line):
        if line in supp:
            rules = supp[line]
            if rules is None or f.rule in rules:
                return True
    return False


# ------------------------------------------------------------------------------ one file
def scan_file(path: str, kind: str = "python", opts: Optional[ScanOptions] = None) -> FileResult:
    """Analyse one file. Never raises for a bad file: problems are put in ``FileResult.error``."""
    opts = opts or ScanOptions()
    result = FileResult(path=path, kind=kind)
    try:
        size = os.path.getsize(path)
        if size > opts.max_bytes:
            result.error_kind = "too-large"
            result.error = (f"file is {size / 1e6:.1f} MB, over the {opts.max_bytes / 1e6:.0f} MB limit; "
                            "not analysed (raise it with --max-file-size)")
            return result
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        result.error_kind = "unreadable"
        result.error = f"cannot read: {exc.strerror or exc}"
        return result
    key = None
    if opts.cache_dir:
        key = _cache_key(data, kind, opts)
        cached = _cache_get(opts.cache_dir, key)
        if cached is not None:
            cached.path = path
            for f in cached.findings:
                f.path = path
            return cached
    # the cyclic garbage collector would walk every syntax tree node of the file again and again while
    # the trees are being built (most of check's time after parsing); one file's cycles are few, so it
    # runs once the file is done instead
    collecting = gc.isenabled()
    gc.disable()
    try:
        try:
            _analyse_bytes(path, kind, data, opts, result)
        except RecursionError:  # deeper than the visitors reach with the normal recursion limit
            result = FileResult(path=path, kind=kind)
            try:
                limits.deep(_analyse_bytes, path, kind, data, opts, result)
            except RecursionError:
                result = FileResult(path=path, kind=kind, lines=result.lines, error_kind="too-complex",
                                    error=limits.TOO_DEEP)
    except Exception as exc:  # a bug of ours: this file's error, and the run goes on
        if opts.debug:
            raise
        return FileResult(path=path, kind=kind, lines=result.lines, error_kind="internal-error",
                          error=internal_error(exc))
    finally:
        if collecting:
            gc.enable()
    if key is not None and not result.reused:  # (reused: a placeholder, the first pass's result stands)
        _cache_put(opts.cache_dir, key, result)
    return result


def _analyse_bytes(path: str, kind: str, data: bytes, opts: ScanOptions, result: FileResult) -> None:
    from ascend_compat.analysis.visitor import suppressions

    try:
        text = _decode(data)
    except (UnicodeDecodeError, LookupError) as exc:
        result.error_kind = "undecodable"
        result.error = f"not valid UTF-8 and no usable coding declaration ({exc.reason if hasattr(exc, 'reason') else exc})"
        result.lines = data.count(b"\n")
        return
    if "\x00" in text:
        result.error_kind = "binary"
        result.error = "contains NUL bytes: not a text file"
        return
    if kind != "notebook":
        result.lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    try:
        if kind == "python":
            sink = {} if opts.project else None
            findings = _analyse_python(path, text, opts, sink)
            if sink:
                result.facts = sink.get("facts")
                result.reused = sink.get("reused", False)
        elif kind == "notebook":
            result.findings = _notebook(path, text, opts, result)
            return
        else:
            findings = _other_kind(path, kind, text)
    except _stream.PartialAnalysis as exc:  # a large file: the rest of it was analysed
        result.error_kind, findings = exc.kind, exc.findings
        result.error = f"{exc.msg}; analysed without it ({len(findings)} finding(s) kept)"
    except SyntaxError as exc:
        result.error_kind = "parse-error"
        result.error = f"syntax error at line {exc.lineno}: {exc.msg}"
        if kind != "python":
            return
        if len(text) > _stream.WINDOW_BYTES:  # each broken line costs a window's parse, not the file's
            try:
                findings = _analyse_python(path, text, opts, stream_over=0)
            except _stream.PartialAnalysis as partial:
                findings = partial.findings
        else:
            findings = _analyse_around_errors(path, text, opts)
        result.error += f"; analysed without the lines that do not parse ({len(findings)} finding(s) kept)"
    except limits.TooComplex as exc:
        result.error_kind = "too-complex"
        result.error = str(exc)
        return
    except (ValueError, MemoryError) as exc:
        result.error_kind = "parse-error"
        result.error = f"cannot parse: {type(exc).__name__}: {exc}"[:300]
        return
    supp = suppressions(text) if kind in ("python", "cpp", "cmake", "cuda-source") else {}
    for f in findings:
        if _suppressed(f, supp):
            result.suppressed += 1
        else:
            result.findings.append(f)


# ------------------------------------------------------------------------------ cache
def _cache_key(data: bytes, kind: str, opts: ScanOptions) -> str:
    h = hashlib.blake2b(data, digest_size=20)
    facts = opts.project_facts.digest() if opts.project_facts is not None else ""
    h.update(f"\0{kind}\0{ANALYZER_VERSION}\0{opts.torch_npu_version}\0{opts.max_bytes}\0{opts.project}\0{facts}"
             .encode())
    return h.hexdigest()


def _cache_get(cache_dir: str, key: str) -> Optional[FileResult]:
    from ascend_compat.analysis.project import FileFacts

    try:
        with open(os.path.join(cache_dir, key[:2], key + ".json"), encoding="utf-8") as fh:
            doc = json.load(fh)
        result = FileResult.from_dict(doc)
        if doc.get("facts") is not None:
            result.facts = FileFacts.from_dict(doc["facts"])
        return result
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _cache_put(cache_dir: str, key: str, result: FileResult) -> None:
    d = os.path.join(cache_dir, key[:2])
    try:
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        doc = result.to_dict()
        doc["facts"] = result.facts.to_dict() if result.facts is not None else None
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh)
        os.replace(tmp, os.path.join(d, key + ".json"))
    except OSError:
        pass  # a cache that cannot be written is just not used


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ascend-compat", "check")


# ------------------------------------------------------------------------------ many files
@dataclass
class ScanResult:
    files: List[FileResult] = field(default_factory=list)

    @property
    def findings(self) -> List[Finding]:
        return [f for r in self.files for f in r.findings]


_WORKER_OPTS: Optional[ScanOptions] = None


def _init_worker(opts: ScanOptions) -> None:
    global _WORKER_OPTS
    _WORKER_OPTS = opts


def _work(items: List[Tuple[int, str, str]]) -> List[Tuple[int, FileResult]]:
    return [(idx, scan_file(path, kind, _WORKER_OPTS)) for idx, path, kind in items]


def scan_targets(targets: Sequence[Target], opts: Optional[ScanOptions] = None, jobs: Optional[int] = None,
                 progress: Optional[Callable[[int, int], None]] = None) -> List[FileResult]:
    """Analyse targets, in parallel when worthwhile; results in target order. With ``opts.project`` (the
    default), what the files tell each other is resolved in further passes over the files it can change
    (:mod:`ascend_compat.analysis.project`).

    A worker process that dies (killed by the kernel for memory, or a signal) never stalls the run:
    the files it left are analysed again one process each, and a file that kills its process again
    gets that as its error."""
    from dataclasses import replace

    from ascend_compat.analysis.project import MAX_ROUNDS, ProjectFacts

    opts = opts or ScanOptions()
    results = _scan_each(targets, opts, jobs, progress)
    if not opts.project:
        return results
    facts = [r.facts for r in results]
    previous = None
    for _ in range(MAX_ROUNDS):
        project = ProjectFacts(facts)
        if not project or (previous is not None and project.same_as(previous)):
            break
        if previous is None:
            redo = [i for i, f in enumerate(facts) if project.affects(f)]
        else:  # a later round: only the files the new facts reach
            change = project.changed_since(previous)
            redo = [i for i, f in enumerate(facts) if project.affected_by_change(f, change)]
        if not redo:
            break
        followed = {targets[i].path: facts[i].followed for i in redo}
        again = _scan_each([targets[i] for i in redo], replace(opts, project_facts=project, followed=followed),
                           jobs, None)
        for i, r in zip(redo, again):
            if not r.reused:  # (reused: the facts cannot change it; the earlier result stands)
                results[i], facts[i] = r, r.facts
        previous = project
    for r in results:
        r.facts = None  # internal to the analysis
    return results


def _scan_each(targets: Sequence[Target], opts: ScanOptions, jobs: Optional[int],
               progress: Optional[Callable[[int, int], None]]) -> List[FileResult]:
    """Each target analysed on its own, in parallel when worthwhile; results in target order."""
    n = len(targets)
    jobs = jobs or os.cpu_count() or 1
    items = [(i, t.path, t.kind) for i, t in enumerate(targets)]
    out: List[Optional[FileResult]] = [None] * n
    if jobs <= 1 or n < 16:
        for k, (i, p, kind) in enumerate(items):
            out[i] = scan_file(p, kind, opts)
            if progress:
                progress(k + 1, n)
        return out  # type: ignore[return-value]
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    methods = mp.get_all_start_methods()
    ctx = mp.get_context("fork" if "fork" in methods and sys.platform != "darwin" else "spawn")
    chunk = max(1, min(32, n // (jobs * 8)))
    done = 0
    with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_init_worker, initargs=(opts,)) as pool:
        futures = [pool.submit(_work, items[i:i + chunk]) for i in range(0, n, chunk)]
        try:
            for fut in as_completed(futures):
                for i, res in fut.result():
                    out[i] = res
                    done += 1
                    if progress:
                        progress(done, n)
        except BrokenProcessPool:
            pass  # the files without a result are analysed one by one below
    for i, p, kind in items:
        if out[i] is None:
            out[i] = _isolated(ctx, p, kind, opts)
            done += 1
            if progress:
                progress(done, n)
    return out  # type: ignore[return-value]


def _to_pipe(conn, path: str, kind: str, opts: ScanOptions) -> None:
    conn.send(scan_file(path, kind, opts))
    conn.close()


def _isolated(ctx, path: str, kind: str, opts: ScanOptions) -> FileResult:
    """scan_file in a process of its own; an error result naming how it died if it does."""
    import signal

    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_to_pipe, args=(send, path, kind, opts), daemon=True)
    proc.start()
    send.close()
    try:
        return receive.recv()
    except EOFError:
        proc.join()
        code = proc.exitcode or 0
        how = f"signal {signal.Signals(-code).name}" if code < 0 and -code in signal.Signals._value2member_map_ \
            else f"exit status {code}"
        return FileResult(path=path, kind=kind, error_kind="internal-error",
                          error=f"the process analysing this file died ({how}; out of memory?): not analysed")
    finally:
        proc.join()
        receive.close()


def scan_paths(paths: Sequence[str], exclude: Sequence[str] = (), opts: Optional[ScanOptions] = None,
               jobs: Optional[int] = None, use_gitignore: bool = True,
               progress: Optional[Callable[[int, int], None]] = None) -> ScanResult:
    """Discover and analyse everything under ``paths``; path problems become error results."""
    targets, problems = discover(paths, exclude, use_gitignore)
    results = scan_targets(targets, opts, jobs, progress)
    for path, kind, msg in problems:
        results.append(FileResult(path=path, kind="unknown", error=msg, error_kind=kind))
    return ScanResult(results)


def iter_findings(result: ScanResult) -> Iterator[Finding]:
    for r in result.files:
        yield from r.findings
