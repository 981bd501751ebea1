"""Optional CUDA paths: code whose failure on Ascend is caught where it is reached, with another path after it.

A manual construct (a Triton launch, a CUDA build, a CUDA-only library call) is rated partial instead when the
code around it, or every call of the module-level function holding it, sits in the body of a ``try`` whose
handlers catch the error that construct raises on Ascend:

* an import fails with ImportError (``except ImportError`` / ``Exception`` / bare ``except``);
* a run-time use (a launch, a build, a library call) fails with RuntimeError (or ``Exception``, bare);
* an import of the project's own Triton code runs that module, which may turn a missing Triton into either.

A function is optional when it is called in its file, and every call is either guarded so or made from an
optional function (``def dtw(x): try: return dtw_cuda(x) except RuntimeError: ...`` makes ``dtw_cuda``
optional). Only the file's own calls are seen: a function another module calls unguarded is rated by its own
file's calls; and only calls the analysis visited (statements with a trigger word: a call of the name in a
line the analysis skipped leaves the function manual, which costs no second walk). A handler that may raise
again (a ``raise`` in its body, read from the source text because the sparse parse may blank the body) is no
fallback.
"""
from __future__ import annotations

import ast
import re
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

from ascend_compat.analysis.findings import Finding
from ascend_compat.knowledge.records import MANUAL, PARTIAL

#: the rules whose manual findings can be on an optional path (a CUDA kernel, build or library)
RULES = frozenset({"triton-kernel", "cuda-extension", "cuda-library"})
#: an except clause without a type catches everything
ANY = "*"
_BROAD = frozenset({ANY, "Exception", "BaseException"})
IMPORT_ERRORS = _BROAD | {"ImportError", "ModuleNotFoundError"}
RUNTIME_ERRORS = _BROAD | {"RuntimeError"}


def caught(handlers: Iterable[ast.ExceptHandler], line_of: Callable[[int], Optional[str]]) -> FrozenSet[str]:
    """The exception class names a try's handlers catch and do not raise again (``*``: a bare except)."""
    out: Set[str] = set()
    for h in handlers:
        if reraises(line_of, h):
            continue
        todo = [h.type]
        while todo:
            t = todo.pop()
            if t is None:
                out.add(ANY)
            elif type(t) is ast.Tuple:
                todo.extend(t.elts)
            elif type(t) is ast.Name:
                out.add(t.id)
            elif type(t) is ast.Attribute:
                out.add(t.attr)
    return frozenset(out)


_RAISE = re.compile(r"raise\b")
#: how far a handler's body is read for a ``raise`` (a longer handler is taken to re-raise)
_MAX_HANDLER_LINES = 200


def reraises(line_of: Callable[[int], Optional[str]], handler: ast.ExceptHandler) -> bool:
    """Whether a handler may raise again (a ``raise`` anywhere in its body): then it is no fallback. Read from
    the source text below the ``except`` line (the sparse parse may have blanked the body)."""
    if any(type(st) is ast.Raise for st in handler.body if st.lineno == handler.lineno):
        return True  # ``except ImportError: raise``
    n = handler.lineno + 1
    while n <= handler.lineno + _MAX_HANDLER_LINES:
        text = line_of(n)
        if text is None:
            return False
        body = text.lstrip()
        if body and not body.startswith("#"):
            if len(text) - len(body) <= handler.col_offset:
                return False
            if _RAISE.match(body):
                return True
        n += 1
    return True


def guards(names: FrozenSet[str], import_site: bool, rule: str) -> bool:
    """Whether catching ``names`` makes a manual finding of ``rule`` optional (``import_site``: the finding
    is an import)."""
    if not import_site:
        return bool(names & RUNTIME_ERRORS)
    if rule == "triton-kernel":  # the project's Triton module: its own import error may be converted
        return bool(names & (IMPORT_ERRORS | RUNTIME_ERRORS))
    return bool(names & IMPORT_ERRORS)


#: a call of a module function: (the handlers of its enclosing try bodies, calling module function, line)
Call = Tuple[Tuple[list, ...], str, int]


def _all_calls_seen(name: str, seen: int, text: str) -> bool:
    """Whether the text holds no more calls of ``name`` (``name(``, ``x.name(``) than the ``seen`` ones."""
    if not seen:
        return False
    found = len(re.findall(r"(?<![\w])" + re.escape(name) + r"\s*\(", text))
    defs = len(re.findall(r"\bdef\s+" + re.escape(name) + r"\s*\(", text))
    return found - defs <= seen


def optional_functions(calls: Dict[str, List[Call]], defs: Dict[str, Tuple[int, int]],
                       import_site: bool, rule: str, caught_by: Callable, text: str) -> Dict[str, int]:
    """Module-level functions every call of which is guarded for such a finding or made from another
    optional function -> the line of a guarded call (for the message)."""
    out: Dict[str, int] = {}
    changed = True
    while changed:
        changed = False
        for name, sites in calls.items():
            if name in out or name not in defs:
                continue
            others = [s for s in sites if s[1] != name]  # (recursion says nothing)
            ok = [bool(t) and guards(caught_by(t), import_site, rule) for t, _, _ in others]
            if others and all(g or caller in out for g, (_, caller, _) in zip(ok, others)) \
                    and _all_calls_seen(name, len(sites), text):
                out[name] = next((s[2] for g, s in zip(ok, others) if g), others[0][2])
                changed = True
    return out


def apply(findings: List[Finding], import_lines: Set[Tuple[int, int]], calls: Dict[str, List[Call]],
          defs: Dict[str, Tuple[int, int]], caught_by: Callable, text: str) -> None:
    """Rate the manual findings of :data:`RULES` inside optional functions partial (in place)."""
    cache: Dict[Tuple[bool, str], Dict[str, int]] = {}
    spans = sorted((lo, hi, name) for name, (lo, hi) in defs.items())
    for f in findings:
        if f.handling != MANUAL or f.rule not in RULES:
            continue
        holder = next((name for lo, hi, name in spans if lo <= f.line <= hi), None)
        if holder is None or holder not in calls:
            continue
        key = ((f.line, f.col) in import_lines, f.rule)
        if key not in cache:
            cache[key] = optional_functions(calls, defs, key[0], key[1], caught_by, text)
        line = cache[key].get(holder)
        if line is not None:
            f.handling = PARTIAL
            f.message = note(f.message, f"{holder}() is only reached where its failure is caught (line {line})")


def note(message: str, why: str) -> str:
    """``message`` with the reason its construct is optional appended."""
    return f"{message} Optional: {why}." if message.endswith(".") else f"{message}; optional: {why}"
