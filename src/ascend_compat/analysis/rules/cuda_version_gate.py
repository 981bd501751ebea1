"""Rule ``cuda-version-gate``: a branch on the CUDA toolkit version or the compute capability.

``torch.version.cuda`` is None on torch_npu builds and an Ascend host has no nvcc, so a test of the CUDA
toolkit version takes the branch for a missing toolkit; an NPU has no compute capability (the shim makes
one up), so a test of it picks a kernel path by a made-up number. Reported: ``torch.version.cuda``
itself, and each comparison on a value derived from a CUDA query (the flow is followed through
assignments, tuple unpacking, subscripts, calls such as ``int(...)`` and the return values of the file's
functions): ``torch.version.cuda``, ``get_device_capability()``, ``get_arch_list()``, a device's
``.major``/``.minor``, and the output of an nvcc run. Not gates: a presence test (``is None``), the
length of a parsed version's parts (``len(parts) >= 2``) and an ``assert`` on a derived value. A comparison
on a parameter of a module function is a gate when a call in the file hands that parameter a CUDA version
(``flags(cuda_version)``). A comparison is reported under ``device-capability`` when the value comes from
the capability, here otherwise.
"""
from __future__ import annotations

import ast

from ascend_compat.analysis import param_flow
from ascend_compat.analysis.rules import cuda_extension, device_capability
from ascend_compat.analysis.rules.base import PARTIAL, Rule

RULE = Rule('cuda-version-gate', 'api', PARTIAL, 'CUDA toolkit version gate',
            'torch.version.cuda is None on torch_npu builds and Ascend hosts have no nvcc: a test of the CUDA '
            'toolkit version takes the branch for a missing toolkit.',
            'test for the feature or the device (torch.npu.is_available()) instead of the CUDA version.', order=9)
TRIGGERS = ("cuda", "nvcc")
TOOLKIT, CAPABILITY = "toolkit", "capability"
#: state key of the versions the file's calls hand its functions' parameters (analysis/param_flow.py)
_FLOW = RULE.id + ":params"
#: resolved names whose value is a CUDA version or capability, and which kind
SOURCES = {"torch.version.cuda": TOOLKIT, "torch.cuda.get_device_capability": CAPABILITY,
           "torch.cuda.get_arch_list": CAPABILITY, "torch.backends.cudnn.version": TOOLKIT}


def qualname(q: str, version):
    if q == "torch.version.cuda":
        return RULE.id, RULE.handling, "torch.version.cuda: None on torch_npu builds; code gated on it takes its " \
                                       "non-CUDA path", RULE.suggestion
    return None


def _state(v) -> dict:
    st = v.state.get(RULE.id)
    if st is None:
        st = v.state[RULE.id] = {"names": {}, "funcs": {}}
    return st


#: attributes a source ends with (a cheap test before resolving the name)
_SOURCE_ATTRS = frozenset(q.rsplit(".", 1)[-1] for q in SOURCES) | {"major", "minor"}
_RUNNER_ATTRS = frozenset(r.rsplit(".", 1)[-1] for r in cuda_extension.RUNNERS)


def _kind(v, expr):
    """(kind, direct) of the CUDA-derived value ``expr`` holds, or None; ``direct`` = a source is named
    in ``expr`` itself (it is reported where it is named). Walks only the expression forms a value flows
    through (names, attributes, calls, subscripts, operators, containers, f-strings)."""
    st = v.state.get(RULE.id)
    names = st["names"] if st is not None else None
    funcs = st["funcs"] if st is not None else None
    project = v.project.version_funcs if v.project is not None and v.project.version_funcs else None
    found = None
    todo = [expr]
    while todo:
        n = todo.pop()
        t = type(n)
        if t is ast.Name:
            if names and n.id in names:
                found = found or names[n.id]
        elif t is ast.Attribute:
            if n.attr in _SOURCE_ATTRS:
                q = v.qual(n)
                if q is not None and q in SOURCES:
                    return SOURCES[q], True
                if n.attr in ("major", "minor") and type(n.value) is ast.Call:
                    fq = v.qual(n.value.func) if type(n.value.func) in (ast.Name, ast.Attribute) else None
                    if fq == "torch.cuda.get_device_properties":
                        return CAPABILITY, True
            todo.append(n.value)
        elif t is ast.Call:
            f = n.func
            name = f.id if type(f) is ast.Name else f.attr if type(f) is ast.Attribute else None
            if name == "len" and type(f) is ast.Name:
                continue  # the length of a parsed version string's parts is its form, not the version
            if funcs and name in funcs:
                found = found or funcs[name]
            elif project and type(f) in (ast.Name, ast.Attribute) and v.qual(f) in project:
                found = found or project[v.qual(f)]  # another module's version query
            elif name in _RUNNER_ATTRS and _runs_nvcc(v, n):
                found = found or TOOLKIT
            todo.append(f)
            todo.extend(n.args)
            todo.extend(k.value for k in n.keywords)
        elif t is ast.Subscript:
            todo.append(n.value)
            todo.append(n.slice)
        elif t is ast.BinOp:
            todo.append(n.left)
            todo.append(n.right)
        elif t is ast.UnaryOp:
            todo.append(n.operand)
        elif t in (ast.Tuple, ast.List):
            todo.extend(n.elts)
        elif t is ast.JoinedStr:
            todo.extend(x.value for x in n.values if type(x) is ast.FormattedValue)
        elif t is ast.BoolOp:
            todo.extend(n.values)
        elif t is ast.IfExp:
            todo.extend((n.body, n.orelse))
        elif t is ast.Compare:
            todo.append(n.left)
            todo.extend(n.comparators)
    return (found, False) if found else None


def _runs_nvcc(v, call) -> bool:
    return cuda_extension.runs_nvcc(v, call)


def _mark(v, name: str, kind: str, where: str) -> None:
    _state(v)[where][name] = kind
    v.dynamic_names.add(name)  # a use elsewhere holds no trigger word


def on_assign(v, node, targets, value, augmented: bool) -> None:
    k = _kind(v, value)
    if k is None:
        return
    todo = list(targets)
    while todo:  # the names bound (``a, (b, c) = ...``), not those inside ``os.environ[...] = ...``
        t = todo.pop()
        if type(t) is ast.Name:
            _mark(v, t.id, k[0], "names")
        elif type(t) in (ast.Tuple, ast.List):
            todo.extend(t.elts)
        elif type(t) is ast.Starred:
            todo.append(t.value)


def on_return(v, node, function_name: str) -> None:
    k = _kind(v, node.value)
    if k is not None and function_name:
        _mark(v, function_name, k[0], "funcs")


def on_def(v, node) -> None:
    param_flow.on_def(v, _FLOW, node)


def on_call(v, node, q, attr) -> None:
    """A call of a module function of the file handing it a CUDA version (``flags(cuda_version)``)."""
    if q is None and type(node.func) is ast.Name and RULE.id in v.state:  # (else no version seen yet)
        param_flow.hand(v, _FLOW, node, lambda arg: (_kind(v, arg) or (None,))[0])


def on_finish(v) -> None:
    """Comparisons on a parameter that a call in the file hands a CUDA version (the function may come first)."""
    for node, kind in param_flow.resolve(v, _FLOW):
        _report_gate(v, node, kind)


def _report_gate(v, node, kind: str) -> None:
    if kind == CAPABILITY:
        d = device_capability.RULE
        v.report(node, d.id, "branch on a value derived from the CUDA compute capability: " + d.explanation,
                 d.suggestion)
    else:
        v.report(node, RULE.id, "branch on the CUDA toolkit version (from nvcc or torch.version.cuda): "
                 + RULE.explanation, RULE.suggestion)


def on_compare(v, node, operands) -> None:
    """A comparison on a CUDA version or capability that flowed here (one named here is reported by name).
    A presence test (``version is None``) is not a gate: without a toolkit the value is None and the code
    takes the path written for that."""
    if all(type(op) in (ast.Is, ast.IsNot) for op in node.ops) \
            and any(type(o) is ast.Constant and o.value is None for o in operands):
        return
    kinds = [k for k in (_kind(v, o) for o in operands) if k is not None]
    if not kinds:
        _pending(v, node, operands)
        return
    if not any(direct for _, direct in kinds) and not _asserted(v, node):
        _report_gate(v, node, kinds[0][0])


def _asserted(v, node) -> bool:
    """``assert minor < 100`` on a parsed version: a sanity check of the parse, no branch (the query it comes
    from is reported where it is made)."""
    line = v._line(node.lineno) or ""
    return line.lstrip().startswith("assert ") and line.find("assert ") < node.col_offset


def _pending(v, node, operands) -> None:
    """A comparison on a parameter of a module function: a gate if a call hands that parameter a version."""
    for o in operands:
        if param_flow.wait(v, _FLOW, o, node):
            return
