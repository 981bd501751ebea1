"""The libcst transformer of ``migrate``: rewrites exactly the syntax nodes ``check`` reported.

Findings are matched to nodes by position; each rewrite comes from the reporting rule's module
(``rewrite_string``, ``REWRITE_METHOD``, ``REWRITE_ATTR``, ``rewrite_qualname``, ``rewrite_import``;
see :mod:`ascend_compat.analysis.rules.base`), so a rule without a rewrite is never touched.
``import torch_npu`` is inserted by the caller when :attr:`Rewriter.needs_torch_npu` is set.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import PositionProvider

from ascend_compat.analysis.findings import Finding
from ascend_compat.analysis.migrate.changes import Change
from ascend_compat.analysis.rules import cuda_api
from ascend_compat.analysis.rules.registry import Registry


def str_body(value: str) -> Tuple[str, str, str]:
    """Split a string literal's source into (prefix+quote, body, closing quote)."""
    i = 0
    while i < len(value) and value[i] not in "'\"":
        i += 1
    q = value[i:i + 3] if value[i:i + 3] in ('"""', "'''") else value[i]
    return value[:i + len(q)], value[i + len(q):len(value) - len(q)], q


def dotted(node) -> Optional[str]:
    """``a.b.c`` of a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def attr_expr(name: str):
    """The Name/Attribute chain for a dotted name."""
    parts = name.split(".")
    node = cst.Name(parts[0])
    for p in parts[1:]:
        node = cst.Attribute(value=node, attr=cst.Name(p))
    return node


class Rewriter(cst.CSTTransformer):
    """Apply the reporting rules' rewrites to a libcst module (visit it through a MetadataWrapper)."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, module: cst.Module, findings: Sequence[Finding], registry: Registry,
                 version: Optional[str], path: str, cell: Optional[int] = None, line_offset: int = 0):
        """``module`` may be one statement of the file: its line 1 is the file's ``line_offset + 1``."""
        super().__init__()
        self.module, self.reg, self.version, self.path, self.cell = module, registry, version, path, cell
        self.line_offset = line_offset
        self.by_pos: Dict[Tuple[int, int], List[Finding]] = {}
        self.by_line: Dict[Tuple[int, str], List[Finding]] = {}
        for f in findings:
            self.by_pos.setdefault((f.line, f.col - 1), []).append(f)
            self.by_line.setdefault((f.line, f.rule), []).append(f)
        #: id() of the findings rewritten
        self.done: Set[int] = set()
        self.changes: List[Change] = []
        self.needs_torch_npu = False
        self._claimed: Set[Tuple[int, int]] = set()
        self._targets: Dict[int, Finding] = {}

    # ------------------------------------------------------------------ plumbing
    def _pos(self, node) -> Tuple[int, int]:
        p = self.get_metadata(PositionProvider, node).start
        return p.line + self.line_offset, p.column

    def _take(self, pos, rules) -> Optional[Finding]:
        for f in self.by_pos.get(pos, ()):
            if f.rule in rules:
                return f
        return None

    def _record(self, f: Finding, before: str, after: str, line: Optional[int] = None) -> None:
        self.done.add(id(f))
        self.changes.append(Change(self.path, line or f.line, f.rule, before, after, self.cell))
        self.needs_torch_npu |= self.reg.needs_torch_npu(f.rule, f)

    def _code(self, node) -> str:
        return self.module.code_for_node(node).strip()

    def _mark_done(self, line: int, rule: str) -> None:
        for f in self.by_line.get((line, rule), ()):
            self.done.add(id(f))

    # ------------------------------------------------------------------ strings
    def leave_SimpleString(self, orig, upd):
        f = self._take(self._pos(orig), self.reg.rewrite_string)
        if f is None:
            return upd
        head, body, q = str_body(upd.value)
        new_body = self.reg.rewrite_string[f.rule](body)
        if new_body is None or new_body == body:
            return upd
        new = upd.with_changes(value=head + new_body + q)
        self._record(f, self._code(orig), self._code(new))
        return new

    def leave_FormattedString(self, orig, upd):
        f = self._take(self._pos(orig), self.reg.rewrite_string)
        if f is None or not upd.parts or not isinstance(upd.parts[0], cst.FormattedStringText):
            return upd
        first = upd.parts[0]
        head = self.reg.rewrite_string[f.rule](first.value)
        if head is None or head == first.value:
            return upd
        new = upd.with_changes(parts=[first.with_changes(value=head)] + list(upd.parts[1:]))
        self._record(f, self._code(orig), self._code(new))
        return new

    # ------------------------------------------------------------------ .cuda() / .is_cuda / chains
    def leave_Call(self, orig, upd):
        func = upd.func
        if isinstance(func, cst.Attribute):  # findings of a method call are at the method's name
            f = self._take(self._pos(orig.func.attr), self.reg.rewrite_method)
            if f is not None and func.attr.value == self.reg.rewrite_method[f.rule][0]:
                new_name = self.reg.rewrite_method[f.rule][1]
                # the line of the name rewritten (a receiver may span lines: "foo(\n...\n).cuda()")
                self._record(f, f".{func.attr.value}(", f".{new_name}(", self._pos(orig.func.attr)[0])
                return upd.with_changes(func=func.with_changes(attr=cst.Name(new_name)))
        return upd

    def visit_Attribute(self, node):
        pos = self._pos(node)
        if pos not in self._claimed:
            f = self._take(pos, self.reg.rewrite_qualname)
            if f is not None:
                self._claimed.add(pos)
                self._targets[id(node)] = f
        return True

    def leave_Attribute(self, orig, upd):
        f = self._take(self._pos(orig), self.reg.rewrite_attr)
        if f is not None and id(f) not in self.done and upd.attr.value == self.reg.rewrite_attr[f.rule][0]:
            new = upd.with_changes(attr=cst.Name(self.reg.rewrite_attr[f.rule][1]))
            self._record(f, self._code(orig), self._code(new), self._pos(orig.attr)[0])
            return new
        f = self._targets.get(id(orig))
        if f is None:
            return upd
        name = dotted(upd)
        target = self.reg.rewrite_qualname[f.rule](name, self.version) if name else None
        if not target:
            return upd
        new = cst.parse_expression(target)
        self._record(f, self._code(orig), self._code(new))
        return new

    # ------------------------------------------------------------------ imports
    def _import_target(self, mod: str) -> Tuple[Optional[str], Optional[str]]:
        """(rule, new module) of the first rule that rewrites ``from mod import ...``."""
        for rule, hook in self.reg.rewrite_import.items():
            new = hook(mod)
            if new:
                return rule, new
        return None, None

    def leave_ImportFrom(self, orig, upd):
        if upd.relative or upd.module is None:
            return upd
        mod = dotted(upd.module)
        if mod is None:
            return upd
        line = self._pos(orig)[0]
        rule, target = self._import_target(mod)
        new = None
        if target is not None and target.startswith("torch_npu.npu"):
            if isinstance(upd.names, cst.ImportStar):
                return upd
            sub = mod[len("torch.cuda"):]
            names = []
            for a in upd.names:
                name = dotted(a.name)
                full = (sub[1:] + "." if sub else "") + name
                npu = cuda_api.has_npu_counterpart(full, self.version)
                if not npu or cuda_api.status(full, self.version).rule == "device-capability":
                    return upd
                last = npu.rsplit(".", 1)[-1]
                if last != name and a.asname is None:
                    a = a.with_changes(name=cst.Name(last), asname=cst.AsName(name=cst.Name(name)))
                elif last != name:
                    a = a.with_changes(name=cst.Name(last))
                names.append(a)
            rule = "cuda-amp" if sub.startswith(".amp") else rule
            new = upd.with_changes(module=attr_expr(target), names=names)
        elif target is not None:
            new = upd.with_changes(module=attr_expr(target))
        elif mod == "torch" and not isinstance(upd.names, cst.ImportStar) and len(upd.names) == 1 \
                and dotted(upd.names[0].name) == "cuda":
            rule = "torch-cuda-api"
            a = upd.names[0]
            new = upd.with_changes(module=cst.Name("torch_npu"), names=[a.with_changes(
                name=cst.Name("npu"), asname=a.asname or cst.AsName(name=cst.Name("cuda")))])
        if new is None:
            return upd
        self.changes.append(Change(self.path, line, rule, self._code(orig), self._code(new), self.cell))
        self._mark_done(line, rule)
        self.needs_torch_npu |= self.reg.needs_torch_npu(rule)
        return new

    def leave_Import(self, orig, upd):
        line = self._pos(orig)[0]
        names = []
        changed = False
        for a in upd.names:
            name = dotted(a.name)
            rule, target = self._import_target(name or "")
            if target is None:
                names.append(a)
                continue
            if target.startswith("torch_npu.npu"):
                if name != "torch.cuda" or a.asname is None:
                    names.append(a)
                    continue
                a = a.with_changes(name=attr_expr(target))
            else:
                if name != "flash_attn":
                    names.append(a)
                    continue
                a = a.with_changes(name=attr_expr(target), asname=a.asname or cst.AsName(name=cst.Name(name)))
                self._mark_done(line, rule)
            self.needs_torch_npu |= self.reg.needs_torch_npu(rule)
            changed = True
            names.append(a)
        if not changed:
            return upd
        new = upd.with_changes(names=names)
        self.changes.append(Change(self.path, line, "import", self._code(orig), self._code(new), self.cell))
        return new
