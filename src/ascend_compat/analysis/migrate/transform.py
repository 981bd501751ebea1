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
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

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


def check_round_trip(text: str):
    """The libcst module of ``text``; MigrateError unless libcst reproduces it byte for byte (else a
    rewrite could change what it did not touch, or positions could disagree with check's)."""
    import libcst as cst

    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        first = str(exc).splitlines()[0]
        try:
            compile(text, "<migrate>", "exec", dont_inherit=True, flags=ast.PyCF_ONLY_AST)
        except (SyntaxError, ValueError):
            raise MigrateError(f"does not parse: {first}") from None
        raise MigrateError(f"libcst cannot parse it (Python can; left untouched): {first}") from None
    except RecursionError:
        raise MigrateError("nested too deeply to parse") from None
    except Exception as exc:  # libcst's grammar lags CPython's in places
        raise MigrateError(f"libcst cannot parse it: {str(exc).splitlines()[0]}") from None
    if module.code != text:
        line = next((i for i, (a, b) in enumerate(zip(module.code.splitlines(), text.splitlines()), 1) if a != b),
                    min(len(module.code.splitlines()), len(text.splitlines())) + 1)
        raise MigrateError(f"libcst does not reproduce this file exactly (from line {line}); left untouched "
                           "so nothing else in it can change")
    return module


def migrate_source(code: str, path: str = "<string>", torch_npu_version: Optional[str] = None,
                   annotate: bool = False, cell: Optional[int] = None) -> SourceResult:
    """Rewrite ``code``. Raises :class:`MigrateError` if it cannot be parsed (nothing is changed)."""
    _require_libcst()
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from ascend_compat.analysis.migrate.rewriter import Rewriter
    from ascend_compat.analysis.rules.registry import default
    from ascend_compat.analysis.scan import _parse

    try:
        tree = _parse(code, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise MigrateError(f"cannot parse: {getattr(exc, 'msg', exc)} (line {getattr(exc, 'lineno', '?')})") from None
    reg = default()
    findings = _findings(code, tree, path, torch_npu_version, cell)
    if not any(f.rule in reg.rewritable for f in findings):
        return SourceResult(_annotate(code, findings) if annotate and findings else code, [], findings)
    module = check_round_trip(code)
    rw = Rewriter(module, findings, reg, torch_npu_version, path, cell)
    new_module = MetadataWrapper(module, unsafe_skip_copy=True).visit(rw)
    changes = rw.changes
    if rw.needs_torch_npu and not _imports_torch_npu(new_module):
        new_module, inserted_after = _insert_torch_npu(new_module)
        if inserted_after is not None:
            changes.append(Change(path, inserted_after + 1, "import", "", "import torch_npu", cell))
    out = new_module.code
    # what is left is what check still reports on the result
    remaining = _findings(out, _parse(out, path), path, torch_npu_version, cell) if out != code else findings
    if annotate and remaining:
        out = _annotate(out, remaining)
    changes.sort(key=lambda c: c.line)
    return SourceResult(out, changes, remaining)


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


def _imports_torch_npu(module) -> bool:
    import libcst as cst

    from ascend_compat.analysis.migrate.rewriter import dotted as _dotted

    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for s in stmt.body:
                if isinstance(s, cst.Import) and any(_dotted(a.name) == "torch_npu" for a in s.names):
                    return True
    return False


def _insert_torch_npu(module):
    """Insert ``import torch_npu`` after the first top-level ``import torch`` (or torch-ish import)."""
    import libcst as cst

    from ascend_compat.analysis.migrate.rewriter import dotted as _dotted

    body = list(module.body)
    best = None
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine):
            for s in stmt.body:
                if isinstance(s, cst.Import) and any((_dotted(a.name) or "").split(".")[0] == "torch" for a in s.names):
                    best = i
                    break
                if best is None and isinstance(s, cst.ImportFrom) and s.module is not None and \
                        (_dotted(s.module) or "").split(".")[0] == "torch":
                    best = ("from", i)
        if isinstance(best, int):
            break
    if isinstance(best, tuple):
        best = best[1]
    if best is None:
        return module, None
    line = len(module.header) + sum(module.code_for_node(s).count("\n") for s in body[:best + 1])
    header_lines = 0
    new_stmt = cst.parse_statement("import torch_npu\n")
    body.insert(best + 1, new_stmt)
    return module.with_changes(body=body), line + header_lines


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
