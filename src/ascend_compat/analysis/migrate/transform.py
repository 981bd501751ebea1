"""Rewrite one Python source for Ascend with libcst (formatting preserved). Needs ``libcst``.

The decisions come from the same analysis as ``check``: :class:`PyAnalyzer` reports which string
literals are used as devices/backends/environment names, which ``.cuda()`` calls and ``torch.cuda``
chains exist; this module rewrites exactly those syntax nodes (matched by position) and nothing
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
from ascend_compat.knowledge import backends, devices, env_vars

TODO_TAG = "# TODO(ascend-compat):"
ENV_RENAMES = env_vars.RENAMES
HF32 = {"torch.backends.cuda.matmul.allow_tf32": "torch.npu.matmul.allow_hf32",
        "torch.backends.cudnn.allow_tf32": "torch.npu.conv.allow_hf32"}
FLASH_MODULES = {"flash_attn", "flash_attn.flash_attn_interface", "flash_attn.bert_padding"}
FLASH_TARGET = "ascend_compat.ecosystem.dropins.flash_attn"


#: rules some finding of which migrate may rewrite (files without any are not re-parsed with libcst)
REWRITABLE = frozenset({"device-string", "device-compare", "nccl-backend", "cuda-amp", "cuda-env", "cuda-method",
                        "is-cuda", "torch-cuda-api", "cuda-graph", "legacy-tensor-type",
                        "cudnn-flag", "cuda-backend-flag", "cuda-library"})


class MigrateError(Exception):
    """The source could not be rewritten (it is left untouched)."""


@dataclass
class Change:
    path: str
    line: int
    rule: str
    before: str
    after: str
    cell: Optional[int] = None

    def to_dict(self) -> dict:
        d = {"path": self.path, "line": self.line, "rule": self.rule, "before": self.before, "after": self.after}
        if self.cell is not None:
            d["cell"] = self.cell
        return d


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


def _str_body(value: str) -> Tuple[str, str, str]:
    """Split a string literal's source into (prefix+quote, body, closing quote)."""
    i = 0
    while i < len(value) and value[i] not in "'\"":
        i += 1
    q = value[i:i + 3] if value[i:i + 3] in ('"""', "'''") else value[i]
    return value[:i + len(q)], value[i + len(q):len(value) - len(q)], q


def migrate_source(code: str, path: str = "<string>", torch_npu_version: Optional[str] = None,
                   annotate: bool = False, cell: Optional[int] = None) -> SourceResult:
    """Rewrite ``code``. Raises :class:`MigrateError` if it cannot be parsed (nothing is changed)."""
    _require_libcst()
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from ascend_compat.analysis.rules import cuda_api

    from ascend_compat.analysis.scan import _parse

    try:
        tree = _parse(code, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise MigrateError(f"cannot parse: {getattr(exc, 'msg', exc)} (line {getattr(exc, 'lineno', '?')})") from None
    findings = _findings(code, tree, path, torch_npu_version, cell)
    if not any(f.rule in REWRITABLE for f in findings):
        return SourceResult(_annotate(code, findings) if annotate and findings else code, [], findings)
    try:
        module = cst.parse_module(code)
    except Exception as exc:  # libcst's grammar lags CPython's in places
        raise MigrateError(f"libcst cannot parse it: {str(exc).splitlines()[0]}") from None

    by_pos: Dict[Tuple[int, int], List[Finding]] = {}
    for f in findings:
        by_pos.setdefault((f.line, f.col - 1), []).append(f)
    done: Set[int] = set()  # id() of findings rewritten
    by_id = {id(f): f for f in findings}
    changes: List[Change] = []

    def take(pos, rules) -> Optional[Finding]:
        for f in by_pos.get(pos, ()):
            if f.rule in rules:
                return f
        return None

    class T(cst.CSTTransformer):
        METADATA_DEPENDENCIES = (PositionProvider,)

        def __init__(self):
            super().__init__()
            self.claimed: Set[Tuple[int, int]] = set()
            self.targets: Dict[int, str] = {}
            self.needs_torch_npu = False

        def _pos(self, node) -> Tuple[int, int]:
            p = self.get_metadata(PositionProvider, node).start
            return p.line, p.column

        def _record(self, f: Finding, orig, new, line=None):
            done.add(id(f))
            changes.append(Change(path, line or f.line, f.rule, module.code_for_node(orig).strip(),
                                  module.code_for_node(new).strip(), cell))

        # -- strings
        def leave_SimpleString(self, orig, upd):
            pos = self._pos(orig)
            f = take(pos, ("device-string", "device-compare", "nccl-backend", "cuda-amp", "cuda-env"))
            if f is None:
                return upd
            head, body, q = _str_body(upd.value)
            if f.rule == "nccl-backend":
                new_body = backends.rewrite(body)
            elif f.rule == "cuda-env":
                new_body = ENV_RENAMES.get(body, body)
            elif body.startswith("cuda"):
                new_body = devices.TARGET + body[4:]  # "cuda", "cuda:N" and "cuda:{}" (devices.rewrite's grammar, widened)
            else:
                return upd
            if new_body == body:
                return upd
            new = upd.with_changes(value=head + new_body + q)
            self._record(f, orig, new)
            if f.rule != "cuda-env":
                self.needs_torch_npu = True
            return new

        def leave_FormattedString(self, orig, upd):
            f = take(self._pos(orig), ("device-string", "cuda-amp", "device-compare"))
            if f is None or not upd.parts or not isinstance(upd.parts[0], cst.FormattedStringText):
                return upd
            first = upd.parts[0]
            if not first.value.startswith("cuda"):
                return upd
            new = upd.with_changes(parts=[first.with_changes(value="npu" + first.value[4:])] + list(upd.parts[1:]))
            self._record(f, orig, new)
            self.needs_torch_npu = True
            return new

        # -- .cuda() / .is_cuda / torch.cuda.X chains
        def leave_Call(self, orig, upd):
            func = upd.func
            if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
                f = take(self._pos(orig), ("cuda-method",))
                if f is not None:
                    new = upd.with_changes(func=func.with_changes(attr=cst.Name("npu")))
                    done.add(id(f))
                    changes.append(Change(path, f.line, f.rule, ".cuda(", ".npu(", cell))
                    self.needs_torch_npu = True
                    return new
            return upd

        def visit_Attribute(self, node):
            pos = self._pos(node)
            if pos in self.claimed:
                return True
            # device-capability is not rewritten: torch.npu.get_device_capability() returns None
            # unless configured, which breaks "major, minor = ..." (it stays listed for a human)
            f = take(pos, ("torch-cuda-api", "cuda-amp", "cuda-graph",
                           "legacy-tensor-type", "cudnn-flag", "cuda-backend-flag"))
            if f is not None:
                self.claimed.add(pos)
                self.targets[id(node)] = id(f)
            return True

        def leave_Attribute(self, orig, upd):
            if upd.attr.value == "is_cuda":
                f = take(self._pos(orig), ("is-cuda",))
                if f is not None:
                    new = upd.with_changes(attr=cst.Name("is_npu"))
                    self._record(f, orig, new)
                    self.needs_torch_npu = True
                    return new
            fid = self.targets.get(id(orig))
            if fid is None:
                return upd
            f = by_id[fid]
            dotted = _dotted(upd)
            if dotted is None:
                return upd
            target = None
            if dotted in HF32:
                target = HF32[dotted]
            elif dotted.startswith("torch.cuda."):
                npu = cuda_api.has_npu_counterpart(dotted[len("torch.cuda."):], torch_npu_version)
                target = npu
            if not target:
                return upd
            new = cst.parse_expression(target)
            self._record(f, orig, new)
            self.needs_torch_npu = True
            return new

        # -- imports
        def leave_ImportFrom(self, orig, upd):
            if upd.relative or upd.module is None:
                return upd
            mod = _dotted(upd.module)
            if mod is None:
                return upd
            line = self._pos(orig)[0]
            new = None
            rule = "torch-cuda-api"
            if mod == "torch.cuda" or mod.startswith("torch.cuda."):
                sub = mod[len("torch.cuda"):]
                if isinstance(upd.names, cst.ImportStar):
                    return upd
                names = []
                for a in upd.names:
                    name = _dotted(a.name)
                    full = (sub[1:] + "." if sub else "") + name
                    npu = cuda_api.has_npu_counterpart(full, torch_npu_version)
                    if not npu or cuda_api.status(full, torch_npu_version).rule == "device-capability":
                        return upd
                    last = npu.rsplit(".", 1)[-1]
                    if last != name and a.asname is None:
                        a = a.with_changes(name=cst.Name(last), asname=cst.AsName(name=cst.Name(name)))
                    elif last != name:
                        a = a.with_changes(name=cst.Name(last))
                    names.append(a)
                rule = "cuda-amp" if sub.startswith(".amp") else rule
                new = upd.with_changes(module=_attr_expr("torch_npu.npu" + sub), names=names)
            elif mod == "torch" and not isinstance(upd.names, cst.ImportStar) and len(upd.names) == 1 \
                    and _dotted(upd.names[0].name) == "cuda":
                a = upd.names[0]
                new = upd.with_changes(module=cst.Name("torch_npu"), names=[a.with_changes(
                    name=cst.Name("npu"), asname=a.asname or cst.AsName(name=cst.Name("cuda")))])
            elif mod in FLASH_MODULES:
                rule = "cuda-library"
                new = upd.with_changes(module=_attr_expr(FLASH_TARGET))
            if new is None:
                return upd
            changes.append(Change(path, line, rule, module.code_for_node(orig).strip(),
                                  module.code_for_node(new).strip(), cell))
            _mark_done(line, rule)
            if rule != "cuda-library":
                self.needs_torch_npu = True
            return new

        def leave_Import(self, orig, upd):
            line = self._pos(orig)[0]
            names = []
            changed = False
            for a in upd.names:
                name = _dotted(a.name)
                if name in ("torch.cuda",) and a.asname is not None:
                    a = a.with_changes(name=_attr_expr("torch_npu.npu"))
                    changed = True
                    self.needs_torch_npu = True
                elif name == "flash_attn":
                    a = a.with_changes(name=_attr_expr(FLASH_TARGET),
                                       asname=a.asname or cst.AsName(name=cst.Name("flash_attn")))
                    changed = True
                    _mark_done(line, "cuda-library")
                names.append(a)
            if not changed:
                return upd
            new = upd.with_changes(names=names)
            changes.append(Change(path, line, "import", module.code_for_node(orig).strip(),
                                  module.code_for_node(new).strip(), cell))
            return new

    by_line: Dict[Tuple[int, str], List[Finding]] = {}
    for f in findings:
        by_line.setdefault((f.line, f.rule), []).append(f)

    def _mark_done(line, rule):
        for f in by_line.get((line, rule), ()):
            done.add(id(f))

    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    t = T()
    new_module = wrapper.visit(t)
    inserted_after = None
    if t.needs_torch_npu and not _imports_torch_npu(new_module):
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
    from ascend_compat.analysis.rules.python_visitor import PyAnalyzer, suppressions

    an = PyAnalyzer(path, code, version, cell)
    an.feed(tree)
    supp = suppressions(code)
    out = []
    for f in an.finish():
        hit = [supp[ln] for ln in (f.line, f.end_line) if ln in supp]
        if not any(h is None or f.rule in h for h in hit):
            out.append(f)
    return out


def _dotted(node) -> Optional[str]:
    import libcst as cst

    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def _attr_expr(dotted: str):
    import libcst as cst

    parts = dotted.split(".")
    node = cst.Name(parts[0])
    for p in parts[1:]:
        node = cst.Attribute(value=node, attr=cst.Name(p))
    return node


def _imports_torch_npu(module) -> bool:
    import libcst as cst

    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for s in stmt.body:
                if isinstance(s, cst.Import) and any(_dotted(a.name) == "torch_npu" for a in s.names):
                    return True
    return False


def _insert_torch_npu(module):
    """Insert ``import torch_npu`` after the first top-level ``import torch`` (or torch-ish import)."""
    import libcst as cst

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
