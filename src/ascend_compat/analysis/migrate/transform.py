"""Rewrite one Python source for Ascend with libcst (formatting preserved). Needs ``libcst``.

The decisions come from the same analysis as ``check``: :class:`PyAnalyzer` reports which string
literals are used as devices/backends/environment names, which ``.cuda()`` calls and ``torch.cuda``
chains exist; :class:`~ascend_compat.analysis.migrate.rewriter.Rewriter` rewrites exactly those syntax nodes (matched by position) and nothing
else, so ``os.path.join(src, "cuda")`` or a log message is never touched. Rewrites:

* ``"cuda"``/``"cuda:N"``/``f"cuda:{i}"``/``"cuda:{}".format(i)`` used as devices -> ``npu``;
  ``"nccl"`` used as a backend (incl. comparisons with the backend) -> ``"hccl"``;
  ``CUDA_VISIBLE_DEVICES`` / ``PYTORCH_CUDA_ALLOC_CONF`` keys -> the Ascend names;
* ``x.cuda(...)`` -> ``x.npu(...)``; ``x.is_cuda`` -> ``x.is_npu``;
* ``torch.cuda.X`` -> ``torch.npu.X`` when torch_npu has X (per the version's API table), CUDA AMP
  included (``torch.cuda.amp.autocast`` -> ``torch.npu.amp.autocast``); ``from torch.cuda[.sub]
  import ...`` / ``import torch.cuda as m`` / ``from torch import cuda`` -> the ``torch_npu.npu`` module;
* TF32 switches -> HF32 (``torch.backends.cuda.matmul.allow_tf32`` -> ``torch.npu.matmul.allow_hf32``,
  ``torch.backends.cudnn.allow_tf32`` -> ``torch.npu.conv.allow_hf32``);
* ``flash_attn`` imports -> ``ascend_compat.ecosystem.dropins.flash_attn`` (the drop-in);
* ``import torch_npu`` inserted once, after the first ``import torch``, when anything above needs it.

Everything else that ``check`` reports is listed as not rewritten (and, with ``annotate=True``,
gets a ``# TODO(ascend-compat): ...`` comment above its line).
"""
from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

from ascend_compat.analysis import limits
from ascend_compat.analysis.findings import Finding
from ascend_compat.analysis.migrate.changes import Change

TODO_TAG = "# TODO(ascend-compat):"


class MigrateError(Exception):
    """The source could not be rewritten (it is left untouched)."""


@dataclass
class SourceResult:
    code: str
    changes: List[Change] = field(default_factory=list)
    #: findings that were not rewritten (need a human or rely on the shim)
    remaining: List[Finding] = field(default_factory=list)


def _require_libcst():
    try:
        import libcst  # noqa: F401
    except ImportError:
        raise MigrateError("migrate needs libcst: pip install 'ascend-compat[migrate]'") from None


def check_round_trip(text: str, first_line: int = 1):
    """The libcst module of ``text`` (lines counted from ``first_line`` in messages); MigrateError
    unless libcst reproduces it byte for byte (else a rewrite could change what it did not touch, or
    positions could disagree with check's). Call it on text :func:`limits.check_rewritable` passed,
    under :func:`limits.deep`: libcst's native parser has no depth check of its own."""
    import libcst as cst

    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        first = str(exc).splitlines()[0]
        try:
            compile(text, "<migrate>", "exec", dont_inherit=True, flags=ast.PyCF_ONLY_AST)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise MigrateError(f"does not parse: {first}") from None
        raise MigrateError(f"libcst cannot parse it (Python can; left untouched): {first}") from None
    except RecursionError:
        raise MigrateError("nested too deeply to parse") from None
    except Exception as exc:  # libcst's grammar lags CPython's in places
        raise MigrateError(f"libcst cannot parse it: {str(exc).splitlines()[0]}") from None
    if module.code != text:
        line = next((i for i, (a, b) in enumerate(zip(module.code.splitlines(), text.splitlines()), 1) if a != b),
                    min(len(module.code.splitlines()), len(text.splitlines())) + 1)
        raise MigrateError(f"libcst does not reproduce this file exactly (from line {line + first_line - 1}); "
                           "left untouched so nothing else in it can change")
    return module


def migrate_source(code: str, path: str = "<string>", torch_npu_version: Optional[str] = None,
                   annotate: bool = False, cell: Optional[int] = None) -> SourceResult:
    """Rewrite ``code``. Raises :class:`MigrateError` if it cannot be parsed or is past a bound of
    :mod:`~ascend_compat.analysis.limits` (nothing is changed).

    Python's parser finds what to rewrite (as check does); libcst then parses and rewrites only the
    top-level statements holding a rewrite, each alone (so its time and memory follow those
    statements, not the file), and the text between them is kept as it is.
    """
    _require_libcst()
    from ascend_compat.analysis.rules.registry import default

    reg = default()
    tree, findings = _analyse(code, path, torch_npu_version, cell)
    wanted = [f for f in findings if f.rule in reg.rewritable]
    if not wanted:
        return SourceResult(_annotate(code, findings) if annotate and findings else code, [], findings)
    try:
        pieces, changes, needs_torch_npu = limits.deep(_rewrite_groups, code, tree, findings, reg,
                                                       torch_npu_version, path, cell)
    except limits.TooComplex as exc:
        raise MigrateError(str(exc)) from None
    except RecursionError:
        raise MigrateError("nested too deeply to rewrite (past the limits of ascend_compat.analysis.limits)") from None
    out = _splice(code, pieces)
    del tree, pieces  # memory for what follows
    if needs_torch_npu:  # placed by the rewritten imports (import torch.cuda as tc is no longer torch's)
        from ascend_compat.analysis.scan import _parse

        rewritten = _parse(out, path)
        after = None if _imports_torch_npu(rewritten) else _torch_import_line(rewritten)
        del rewritten
        if after is not None:
            out = _insert_line(out, _line_starts(out), after, "import torch_npu")
            changes.append(Change(path, after + 1, "import", "", "import torch_npu", cell))
    # what is left is what check still reports on the result
    remaining = _analyse(out, path, torch_npu_version, cell)[1] if out != code else findings
    if annotate and remaining:
        out = _annotate(out, remaining)
    changes.sort(key=lambda c: c.line)
    return SourceResult(out, changes, remaining)


def _analyse(code: str, path: str, version, cell):
    """(syntax tree, check's findings with suppression comments honoured); MigrateError if Python
    cannot parse ``code`` or it is too deep to analyse even under :func:`limits.deep`."""
    from ascend_compat.analysis.scan import _parse

    try:
        tree = _parse(code, path)
    except limits.TooComplex as exc:
        raise MigrateError(f"cannot parse: {exc}") from None
    except (SyntaxError, ValueError, MemoryError) as exc:
        raise MigrateError(f"cannot parse: {getattr(exc, 'msg', exc)} (line {getattr(exc, 'lineno', '?')})") from None
    try:
        return tree, _findings(code, tree, path, version, cell)
    except RecursionError:
        pass
    try:
        return tree, limits.deep(_findings, code, tree, path, version, cell)
    except RecursionError:
        raise MigrateError("nested too deeply to analyse (past the limits of ascend_compat.analysis.limits)") from None


def _findings(code, tree, path, version, cell) -> List[Finding]:
    """check's findings for ``code`` with suppression comments honoured."""
    from ascend_compat.analysis.visitor import PyAnalyzer, suppressions

    an = PyAnalyzer(path, code, version, cell)
    an.feed(tree)
    supp = suppressions(code)
    out = []
    for f in an.finish():
        hit = [supp[ln] for ln in (f.line, f.end_line) if ln in supp]
        if not any(h is None or f.rule in h for h in hit):
            out.append(f)
    return out


#: neighbouring statements to rewrite are handed to libcst together up to this much text (libcst
#: has a fixed cost per module: 20,000 one-function statements took 100 s one by one), when no more
#: than ``_BATCH_GAP`` of text lies between them
_BATCH_BYTES, _BATCH_GAP = 64 << 10, 4 << 10


def _rewrite_groups(code: str, tree, findings, reg, version, path, cell):
    """(pieces to splice, changes, needs ``import torch_npu``): the groups of top-level statements
    holding a rewrite, neighbours batched, each batch measured (limits.check_rewritable) and
    rewritten alone. Runs under limits.deep."""
    starts = _line_starts(code)
    by_line = sorted(findings, key=lambda f: f.line)
    lines = [f.line for f in by_line]
    batches: List[List[int]] = []  # [first line, last line]
    for first, last in _statement_groups(tree):  # each group's findings by bisection, not a scan of all
        mine = by_line[bisect.bisect_left(lines, first):bisect.bisect_right(lines, last)]
        if not any(f.rule in reg.rewritable for f in mine):
            continue
        if batches and starts[first - 1] - _end(starts, batches[-1][1]) <= _BATCH_GAP \
                and _end(starts, last) - starts[batches[-1][0] - 1] <= _BATCH_BYTES:
            batches[-1][1] = last
        else:
            batches.append([first, last])
    pieces, changes, needs_torch_npu, work = [], [], False, 0
    for first, last in batches:
        a, b = starts[first - 1], _end(starts, last)
        mine = by_line[bisect.bisect_left(lines, first):bisect.bisect_right(lines, last)]
        work += limits.check_rewritable(code[a:b], first, work).work
        try:
            new, piece_changes, needs = _rewrite_piece(code[a:b], mine, reg, version, path, cell, first - 1)
        except RecursionError:
            raise MigrateError(f"the statements from line {first} are nested too deeply to rewrite") from None
        if new != code[a:b]:
            pieces.append((a, b, new))
        changes.extend(piece_changes)
        needs_torch_npu |= needs
    return pieces, changes, needs_torch_npu


def _end(starts: List[int], last: int) -> int:
    """The offset just after line ``last`` (see :func:`_line_starts`)."""
    return starts[min(last, len(starts) - 1)]


def _rewrite_piece(text: str, findings, reg, version, path, cell, line_offset: int):
    """(new text, changes, needs ``import torch_npu``) of one group of top-level statements."""
    from libcst.metadata import MetadataWrapper

    from ascend_compat.analysis.migrate.rewriter import Rewriter

    module = check_round_trip(text, line_offset + 1)
    rw = Rewriter(module, findings, reg, version, path, cell, line_offset=line_offset)
    new_module = MetadataWrapper(module, unsafe_skip_copy=True).visit(rw)
    return new_module.code, rw.changes, rw.needs_torch_npu


_NEWLINE = re.compile(r"\r\n|\r|\n")


def _line_starts(text: str) -> List[int]:
    """Offsets where each line starts, as Python counts lines (after \\n, \\r\\n or a lone \\r), then len(text)."""
    return [0] + [m.end() for m in _NEWLINE.finditer(text) if m.end() < len(text)] + [len(text)]


def _statement_groups(tree) -> List[Tuple[int, int]]:
    """(first line, last line) of the top-level statements, decorators included; statements that
    share a line (``a = 1; b = 2``) are one group."""
    groups: List[List[int]] = []
    for stmt in tree.body:
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
        last = stmt.end_lineno or stmt.lineno
        if groups and first <= groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], last)
        else:
            groups.append([first, last])
    return [(a, b) for a, b in groups]


def _splice(code: str, pieces) -> str:
    if not pieces:
        return code
    out, at = [], 0
    for a, b, new in pieces:
        out.append(code[at:a])
        out.append(new)
        at = b
    out.append(code[at:])
    return "".join(out)


def _imports_torch_npu(tree) -> bool:
    return any(isinstance(s, ast.Import) and any(a.name == "torch_npu" for a in s.names) for s in tree.body)


def _torch_import_line(tree) -> Optional[int]:
    """The last line of the first top-level ``import torch...`` (else ``from torch... import``)."""
    first_from = None
    for stmt in tree.body:
        if isinstance(stmt, ast.Import) and any(a.name.split(".")[0] == "torch" for a in stmt.names):
            return stmt.end_lineno
        if first_from is None and isinstance(stmt, ast.ImportFrom) and stmt.module and \
                stmt.module.split(".")[0] == "torch":
            first_from = stmt.end_lineno
    return first_from


def _insert_line(text: str, starts: List[int], after: int, line: str) -> str:
    """``text`` with ``line`` inserted after its line ``after`` (the file's first newline style)."""
    m = _NEWLINE.search(text)
    nl = m.group(0) if m else "\n"
    at = starts[after] if after < len(starts) - 1 else len(text)
    if at == len(text) and text and not text.endswith(("\n", "\r")):
        return text + nl + line
    return text[:at] + line + nl + text[at:]


def _annotate(code: str, remaining: List[Finding]) -> str:
    lines = code.split("\n")
    notes: Dict[int, List[str]] = {}
    for f in remaining:
        if f.handling == "auto":
            continue
        ln = f.line
        notes.setdefault(ln, []).append(f"{TODO_TAG} [{f.rule}] {f.suggestion}")
    for ln in sorted(notes, reverse=True):
        if not 1 <= ln <= len(lines):
            continue
        target = lines[ln - 1]
        indent = re.match(r"[ \t]*", target).group(0)
        prev = lines[ln - 2] if ln >= 2 else ""
        new = [indent + n for n in dict.fromkeys(notes[ln]) if n not in prev and (indent + n) not in lines[max(0, ln - 6):ln - 1]]
        lines[ln - 1:ln - 1] = new
    out = "\n".join(lines)
    try:
        ast.parse(out)
    except SyntaxError:
        return code  # a comment line landed inside a string or continuation: keep the code unannotated
    return out
