"""Rule ``cuda-library``: CUDA-only third-party libraries (records in :mod:`ascend_compat.knowledge.libraries`).

Reported: each import of a listed library (once per import statement, rated ``partial`` when the
import is guarded by ``except ImportError``: the except branch is the Ascend path), and each use
site reached through an alias (``amp.initialize`` after ``from apex import amp``) or a star import
(``to_python_float(x)`` after ``from apex.fp16_utils import *``). migrate rewrites ``flash_attn``
imports to the ascend-compat drop-in.
"""
from __future__ import annotations

import functools

import ast
import builtins
import re
from ast import Attribute, Name

from ascend_compat.analysis import param_flow
from ascend_compat.analysis.rules.base import AUTO, MANUAL, PARTIAL, Rule, const_str
from ascend_compat.knowledge import libraries

#: the knowledge record of a name (cached: looked up for every import / key string)
_lookup = functools.lru_cache(maxsize=4096)(libraries.lookup)

RULE = Rule('cuda-library', 'third-party', MANUAL, 'CUDA-only library',
            'This library ships CUDA kernels (or drives NVIDIA tools) and does not run on Ascend.',
            'use the Ascend replacement named in each finding.', order=28)
#: words of the library calls that switch on a CUDA-only back-end (knowledge.libraries.SWITCHES), and of NVIDIA's
#: shared libraries' names
TRIGGERS = ("xformers", "flash_attention_", "cuda", "cublas", "cudnn", "nccl", "nvidia")
#: names of NVIDIA's shared libraries that hold none of the words, found at the start of a string
TRIGGER_STRINGS = tuple(sorted(p for p in libraries.NVIDIA_SHARED_LIBRARIES if not any(w in p for w in TRIGGERS)))
#: file names of NVIDIA libraries are reported where the string is a value (not in a message)
STRING_ROLES = ("value",)
#: importing one of these makes a file relevant by itself
TRIGGER_IMPORTS = libraries.TOP_LEVEL_NAMES
#: a name bound to one of these (``import deepspeed``) is followed: its uses can reach a CUDA-only part
FOLLOWED_MODULES = libraries.PARENTS_OF_CUDA_PARTS
#: libraries whose use sites another rule reports (Triton kernels: triton-kernel, once per decorator)
_USE_SITES_ELSEWHERE = frozenset({"triton"})
#: flash_attn modules migrate points at the drop-in
FLASH_MODULES = frozenset({"flash_attn", "flash_attn.flash_attn_interface", "flash_attn.bert_padding"})
FLASH_TARGET = libraries.BY_NAME["flash_attn"].dropin
REWRITE_NEEDS_TORCH_NPU = False
_BUILTINS = frozenset(dir(builtins))


_UNPROVIDED = RULE.id + ":unprovided"


def missing_part(module: str, lib) -> str:
    """The message for ``module``, a part of a library its ascend-compat drop-in does not provide."""
    provided = ", ".join(m for m, impl in lib.provides if impl)
    return (f"{module}: {lib.what}; ascend-compat's {lib.name} drop-in provides only {provided}, so importing "
            "this part fails (ModuleNotFoundError) under the shim")


def adjust_use(v, root: str, c):
    """A use site of a name bound from a part of a library its drop-in does not provide is manual too."""
    module = v.state.get(_UNPROVIDED, {}).get(root)
    if module is None or c[1] == MANUAL:
        return c
    lib = _lookup(module)
    return c[0], MANUAL, c[2] + f"; from {module}, which ascend-compat's {lib.name} drop-in does not provide", c[3]


def message(key: str, lib) -> str:
    """The finding message for a use of ``key``."""
    if lib.verdict == MANUAL:
        return f"{key}: {lib.what} (no Ascend build)"
    if lib.dropin:
        return f"{key}: {lib.what} (ascend-compat drop-in under the shim)"
    return f"{key}: {lib.what} (runs on Ascend with limits)"


def qualname(q: str, version):
    """A use site of a listed library (``apex.amp.initialize``), Triton's language excepted."""
    if "." not in q:
        return None
    lib = _lookup(q)
    if lib is None or lib.verdict == AUTO or lib.name.split(".", 1)[0] in _USE_SITES_ELSEWHERE:
        return None  # (auto: a device-generic library, no CUDA use)
    return RULE.id, lib.verdict, message(q, lib), lib.replacement


def own(v, module: str) -> bool:
    """Whether ``module`` is in the package of the file being checked (a library's own modules importing each
    other, as in bitsandbytes' repository): their CUDA code is found in those modules' files, not by the library's
    name. A script outside the package (its tests, benchmarks, examples) uses the library as any user does."""
    mine = v.module_name
    return bool(mine) and ("." in mine or v.is_package) and module.split(".", 1)[0] == mine.split(".", 1)[0]


def on_import(v, node, module: str, names=()) -> bool:
    """Report an import of a listed library (True), remembering star imports of one."""
    if own(v, module):
        return False
    lib = _lookup(module)
    if lib is None:
        for n in names:
            lib = _lookup(f"{module}.{n}")
            if lib is not None:
                break
    if lib is None or lib.verdict == AUTO:
        return False
    if "*" in names:
        v.star_imports.append(module)
    msg, handling = "import of " + message(lib.name, lib), lib.verdict
    if not lib.provided(module):  # a part of the library its drop-in does not answer: the import fails
        msg, handling = "import of " + missing_part(module, lib), MANUAL
        v.state.setdefault(_UNPROVIDED, {}).update({(n if n != "*" else module): module for n in names} or
                                                    {module.split(".", 1)[0]: module})
    if v.guarded and handling == MANUAL:
        msg, handling = msg + "; optional (the import is guarded by except ImportError)", PARTIAL
    if lib.verdict == MANUAL:
        v.state[_MANUAL_IMPORTED] = True  # its objects may be handed to the file's functions
    v.report(node, RULE.id, msg, lib.replacement, handling=handling)
    return True


def on_string(v, node, s: str, role: str) -> None:
    """``ctypes.CDLL("libcudart.so")``, ``glob("libcudart*.so*")``: a file name of one of NVIDIA's shared libraries
    (:data:`ascend_compat.knowledge.libraries.NVIDIA_SHARED_LIBRARIES`)."""
    if len(s) > 300 or ("." not in s and "*" not in s):
        return
    low = s.lower()
    if not (low.startswith(TRIGGER_STRINGS) or any(w in low for w in TRIGGERS)):
        return
    what = libraries.nvidia_shared_library(s)
    if what is not None:  # (searched for, or kept for later: not found on Ascend, the code's other branch runs)
        _report_library_file(v, node, s, what, PARTIAL)


def _report_library_file(v, node, s: str, what: str, handling: str) -> None:
    loaded = "loaded" if handling == MANUAL else "named"
    v.report(node, RULE.id, f"{s}: a file of {what} {loaded} here, an NVIDIA library that Ascend hosts do not have",
             f"use {libraries.NVIDIA_SHARED_LIBRARY_ADVICE}.", handling=handling)


_HANDLES = RULE.id + ":handles"
#: names bound to an object a CUDA-only library returned -> (its call, line, advice); their parameter flow
_OBJECTS, _FLOW = RULE.id + ":objects", RULE.id + ":params"
_MANUAL_IMPORTED = RULE.id + ":manual-imported"


def _loaded_library(v, node, q):
    """What NVIDIA library a loader call (``ctypes.CDLL("libcudart.so")``) loads, or None."""
    if q not in _LOADERS or not node.args:
        return None
    s = const_str(node.args[0])
    return libraries.nvidia_shared_library(s) if s is not None else None


def on_assign(v, node, targets, value, augmented: bool) -> None:
    """``handle = ctypes.CDLL("libcudart.so")``: the name's method calls are calls into that library;
    ``smi = nvidia_smi.getInstance()``: the name holds an object of a CUDA-only library (no drop-in), whose
    method calls are that library's, also where a call hands it to a parameter."""
    if augmented or type(value) is not ast.Call or type(value.func) not in (Attribute, Name):
        return
    q = v.qual(value.func)
    what = _loaded_library(v, value, q)
    c = v.classify(q) if what is None and q is not None else None
    if what is None and (c is None or c[0] != RULE.id or c[1] != MANUAL):
        return
    for t in targets:
        if type(t) is Name:
            if what is not None:
                v.state.setdefault(_HANDLES, {})[t.id] = (what, value.lineno)
            else:
                v.state.setdefault(_OBJECTS, {})[t.id] = (q, value.lineno, c[3])
            v.dynamic_names.add(t.id)  # its uses hold no trigger word


def on_def(v, node) -> None:
    if _MANUAL_IMPORTED in v.state:  # (no CUDA-only library imported so far: no object to hand over)
        param_flow.on_def(v, _FLOW, node)


def on_finish(v) -> None:
    """Method calls on a parameter that a call in the file hands a CUDA-only library's object."""
    for (node, attr), (q, line, advice) in param_flow.resolve(v, _FLOW):
        v.report(node, RULE.id, f"{attr}(): a method of the {q}() result (line {line}) handed in as a parameter: "
                 "a CUDA-only library without a drop-in", advice, handling=MANUAL)


#: calls that load a shared library: the code then calls into it (``handle.cudaSetDevice(0)``)
_LOADERS = frozenset({"ctypes.CDLL", "ctypes.WinDLL", "ctypes.PyDLL", "ctypes.cdll.LoadLibrary",
                      "ctypes.windll.LoadLibrary", "ctypes.pydll.LoadLibrary"})


def _switch(v, node, sw, where) -> None:
    v.report(where, RULE.id, f"{sw.call}: {sw.owner} {sw.reason}", sw.advice, handling=sw.verdict)


def _switches(v, node, attr) -> None:
    """``pipe.enable_xformers_memory_efficient_attention()``, ``from_pretrained(..., attn_implementation=
    "flash_attention_2")``: a library call that turns on one of its CUDA-only back-ends."""
    sw = libraries.SWITCH_CALLS.get(attr) if attr else None
    if sw is not None and not (node.args and type(node.args[0]) is ast.Constant and node.args[0].value is False):
        _switch(v, node, sw, node)
    for k in node.keywords:
        if k.arg is not None and type(k.value) is ast.Constant:
            sw = libraries.SWITCH_KEYWORDS.get((k.arg, str(k.value.value)))
            if sw is not None:
                _switch(v, node, sw, k.value)


def on_call(v, node, q, attr) -> None:
    """A library call switching on a CUDA-only back-end; ``name(...)`` where ``name`` is bound by nothing but a
    star import of a listed library
    (the file binds it nowhere itself, it is no builtin, and no other module is star-imported)."""
    _switches(v, node, attr)
    what = _loaded_library(v, node, q)
    if what is not None:
        _report_library_file(v, node.args[0], const_str(node.args[0]), what, MANUAL)
    f = node.func
    if type(f) is Attribute and type(f.value) is Name and f.value.id in v.state.get(_HANDLES, ()):
        what, line = v.state[_HANDLES][f.value.id]
        v.report(node, RULE.id, f"{f.attr}(): a call into {what}, loaded with ctypes at line {line}, which Ascend "
                 "hosts do not have", f"use {libraries.NVIDIA_SHARED_LIBRARY_ADVICE}.", handling=MANUAL)
    elif type(f) is Attribute and type(f.value) is Name:
        param_flow.wait(v, _FLOW, f.value, (node, f.attr))  # a library object may be handed in
    objects = v.state.get(_OBJECTS)
    if objects and q is None and type(f) is Name:
        param_flow.hand(v, _FLOW, node, lambda arg: objects.get(arg.id) if type(arg) is Name else None)
    if not v.star_imports or None in v.star_imports or q is not None or type(node.func) is not ast.Name:
        return  # None: another module was star-imported too, the name may come from it
    name = node.func.id
    if name in _BUILTINS or v.bound(name) or name in _defined_names(v):
        return
    module = v.star_imports[-1]
    lib = _lookup(module)
    v.report(node.func, RULE.id, message(f"{module}.{name}", lib) + f" (from {module} import *)",
             lib.replacement, handling=lib.verdict)


_BINDING = re.compile(r"^[ \t]*(?:(?:async[ \t]+)?def[ \t]+(\w+)|class[ \t]+(\w+)|(\w+)[ \t]*(?::[^=\n]*)?=(?!=)"
                      r"|(?:from[ \t]+\S+[ \t]+)?import\b([^\n#]*))", re.M)
_WORD = re.compile(r"\w+")


def _defined_names(v) -> set:
    """The names the file binds itself (a def, class, assignment, or any word of an import line),
    found in one pass over its text and kept while the text is the same (one regex search of the
    file per call site took minutes on a large file with a star import)."""
    text = v.full_text
    cached = v.state.get("cuda-library:defined")
    if cached is not None and cached[0] is text:
        return cached[1]
    names = set()
    for m in _BINDING.finditer(text):
        if m.group(4) is not None:
            names.update(_WORD.findall(m.group(4)))
        else:
            names.add(m.group(1) or m.group(2) or m.group(3))
    v.state["cuda-library:defined"] = (text, names)
    return names


def rewrite_import(module: str):
    """``flash_attn`` modules -> the ascend-compat drop-in."""
    return FLASH_TARGET if module in FLASH_MODULES else None
