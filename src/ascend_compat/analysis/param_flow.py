"""Values a file's own calls hand to its module functions' parameters (``flags(cuda_version)``,
``report(nvsmi)``): what a rule knows about an argument holds for the parameter inside the function.

A rule keeps one :class:`Flow` (under its own key in the analyzer's state). While the file is visited it
records each module function's parameter names (:func:`on_def`), each use of a parameter it would report if
the parameter held such a value (:func:`wait`: the function usually comes before its calls), and each call
that hands a parameter such a value (:func:`hand`); at the end (:func:`resolve`) the uses of parameters some
call handed one are the rule's. Only the file's module functions called by name are followed (a builtin such as
``int(version)`` is none, unless the file binds the name first); a call from another module is not seen. A
function and parameter handed a value become dynamic names, so a body without trigger words is visited where it
uses them.
"""
from __future__ import annotations

import ast
import builtins
from typing import Callable, Dict, Iterator, List, Optional, Tuple


#: names of Python's builtins: ``int(version)`` hands nothing to a function of the file (unless it rebinds the name)
_BUILTINS = frozenset(dir(builtins))


class Flow:
    """One rule's parameter facts in one file."""

    def __init__(self) -> None:
        #: module function -> its parameter names, in order
        self.params: Dict[str, List[str]] = {}
        #: (function, parameter) -> the rule's payloads of uses waiting for a value
        self.waiting: Dict[Tuple[str, str], List[object]] = {}
        #: (function, position or keyword) -> what a call handed it
        self.given: Dict[Tuple[str, object], object] = {}


def flow(v, key: str) -> Flow:
    f = v.state.get(key)
    if f is None:
        f = v.state[key] = Flow()
    return f


def on_def(v, key: str, node) -> None:
    """Record a module function's parameters (call from the rule's ``on_def`` hook)."""
    if not v.function_stack:
        a = node.args
        flow(v, key).params[node.name] = [p.arg for p in list(getattr(a, "posonlyargs", [])) + list(a.args)
                                          + list(a.kwonlyargs)]


def parameter(v, key: str, expr) -> Optional[Tuple[str, str]]:
    """(function, parameter) when ``expr`` names a parameter of the module function being visited."""
    if type(expr) is not ast.Name or len(v.function_stack) != 1 or not v.function_stack[0]:
        return None
    f = v.state.get(key)
    func = v.function_stack[0]
    if f is None or expr.id not in f.params.get(func, ()):
        return None
    return func, expr.id


def wait(v, key: str, expr, payload) -> bool:
    """A use the rule reports if ``expr`` (a parameter) is handed a value; False if ``expr`` is no parameter."""
    p = parameter(v, key, expr)
    if p is None:
        return False
    flow(v, key).waiting.setdefault(p, []).append(payload)
    return True


def hand(v, key: str, call: ast.Call, value_of: Callable) -> None:
    """A call of a module function by name: record what ``value_of(argument)`` (None: nothing) says each
    argument holds."""
    if type(call.func) is not ast.Name:
        return
    func = call.func.id
    if func in _BUILTINS and not v.bound(func):
        return  # (marking ``str`` followed would make every ``str(`` of the file a trigger)
    f = flow(v, key)
    params = f.params.get(func)
    for slot, arg in list(enumerate(call.args)) + [(k.arg, k.value) for k in call.keywords if k.arg]:
        value = value_of(arg)
        if value is None:
            continue
        f.given[(func, slot)] = value
        v.dynamic_names.add(func)  # the function's body is visited where it uses the parameter
        if params is not None and (type(slot) is str or slot < len(params)):
            v.dynamic_names.add(slot if type(slot) is str else params[slot])


def resolve(v, key: str) -> Iterator[Tuple[object, object]]:
    """(payload, value) of each waiting use whose parameter some call handed a value."""
    f = v.state.get(key)
    if f is None or not f.waiting or not f.given:
        return
    for (func, name), payloads in f.waiting.items():
        names = f.params.get(func, [])
        value = f.given.get((func, name))
        if value is None and name in names:
            value = f.given.get((func, names.index(name)))
        if value is not None:
            for payload in payloads:
                yield payload, value
