"""Rule ``triton-kernel``: Triton kernels, their launches and Triton's runtime API.

Reported: each ``@triton.jit`` / ``@triton.autotune`` / ``@triton.heuristics`` kernel (once, at its decorator),
each launch ``kernel[grid](...)`` of a kernel defined in the file (or, with project facts, in another module
of the checked project), with project facts each import of the project's Triton code (a kernel, a function
that launches one, a module defining them), and each use of Triton's runtime API outside a kernel body
(``triton.cdiv``, ``triton.next_power_of_2``, ``triton.Config``, ``triton.runtime.driver``,
``triton.testing``...). Inside a kernel body the ``triton.language`` calls are the kernel itself and are not
reported one by one.
"""
from __future__ import annotations

import ast

from ascend_compat.analysis.rules.base import MANUAL, PARTIAL, Rule

RULE = Rule('triton-kernel', 'third-party', MANUAL, 'Triton kernel',
            'Triton kernels need triton-ascend on NPU; kernels tuned for NVIDIA (num_warps, shared-memory'
            ' sizes, tl.dot shapes) usually need porting.',
            'install triton-ascend and port the kernel, or use a torch / torch_npu equivalent.', order=29)
TRIGGERS = ()  # every report is reached through a name a triton import binds: the scanner follows it
NAMES = frozenset({"triton.jit", "triton.autotune", "triton.heuristics"})
_KERNELS = RULE.id + ":kernels"
_LAUNCHES = RULE.id + ":launches"
#: how a finding on an import of the project's Triton code starts (see :func:`rated_elsewhere`)
PROJECT_IMPORT = "import of the project's Triton code: "
_SEEN = RULE.id + ":chain"


def qualname(q: str, version):
    if q in NAMES:
        return RULE.id, RULE.handling, f"@{q} kernel: {RULE.explanation}", RULE.suggestion
    return None


def _decorator_qual(v, d):
    return v.qual(d.func if type(d) is ast.Call else d) if type(d) in (ast.Name, ast.Attribute, ast.Call) else None


def launch_lines(v) -> list:
    """Lines of this file's kernel definitions and launches (what makes a function a launcher for the project)."""
    return v.state.setdefault(_LAUNCHES, [])


def kernels(v) -> set:
    """Names of the Triton kernels known in this file (its own, and the project's it imports)."""
    return v.state.setdefault(_KERNELS, set())


def on_def(v, node) -> None:
    """Remember a function decorated as a Triton kernel (its launches and its body)."""
    if any(_decorator_qual(v, d) in NAMES for d in node.decorator_list):
        kernels(v).add(node.name)
        launch_lines(v).append(node.lineno)
        v.dynamic_names.add(node.name)  # a launch elsewhere holds no trigger word


def _in_kernel(v) -> bool:
    ks = v.state.get(_KERNELS)
    return bool(ks) and any(f in ks for f in v.function_stack)


def on_attribute(v, node, q) -> None:
    """Triton's runtime API outside a kernel (``triton.cdiv``); one finding per attribute chain."""
    if q is None or not q.startswith("triton.") or q.startswith("triton.language") or q in NAMES:
        return
    seen = v.state.setdefault(_SEEN, set())
    if id(node) in seen or _in_kernel(v):
        return
    inner = node.value
    while type(inner) is ast.Attribute:
        seen.add(id(inner))
        inner = inner.value
    v.report(node, RULE.id, f"{q}: Triton's runtime API. {RULE.explanation}", RULE.suggestion)


def on_import(v, node, module: str, names=()) -> bool:
    """With project facts: an import of the project's Triton code (a kernel, a function that launches one, or
    a module defining them): the importing file runs Triton kernels through it. Partial: the porting is done,
    and rated, where the kernels are defined."""
    p = v.project
    if p is None or not p.triton_modules:
        return False
    hits = [f"{module}.{n}" for n in names if f"{module}.{n}" in p.kernels or f"{module}.{n}" in p.launchers
            or f"{module}.{n}" in p.triton_modules]
    if not hits and not names and module in p.triton_modules:
        hits = [module]
    if not hits:
        return False
    what = ", ".join(f"{h} ({'a Triton kernel' if h in p.kernels else 'launches Triton kernels, ' + p.launchers[h]})"
                     if h not in p.triton_modules else f"{h} (a module defining Triton kernels)" for h in hits)
    v.report(node, RULE.id, f"{PROJECT_IMPORT}{what}. This file runs those kernels; they are ported where they are "
             "defined (rated there).", RULE.suggestion, handling=PARTIAL)
    return True


def rated_elsewhere(f) -> bool:
    """Whether a finding is an import of the project's Triton code: its difficulty is the kernels' file's."""
    return f.rule == RULE.id and f.message.startswith(PROJECT_IMPORT)


def on_call(v, node, q, attr) -> None:
    """``kernel[grid](...)``: a launch of a Triton kernel."""
    f = node.func
    if type(f) is not ast.Subscript or type(f.value) not in (ast.Name, ast.Attribute):
        return
    name = f.value.id if type(f.value) is ast.Name else None
    if name is not None and name in v.state.get(_KERNELS, ()):
        launch_lines(v).append(node.lineno)
        v.report(node, RULE.id, f"launch of the Triton kernel {name}: {RULE.explanation}", RULE.suggestion)
    elif v.project is not None and v.project.kernels:
        q = v.qual(f.value)
        if q in v.project.kernels:  # a kernel another module of the project defines
            launch_lines(v).append(node.lineno)
            v.report(node, RULE.id, f"launch of the Triton kernel {q}: {RULE.explanation}", RULE.suggestion)
