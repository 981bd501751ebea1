"""Rule ``cuda-extension``: custom CUDA extension, and the pieces of a CUDA build wherever a script keeps them.

Reported: ``CUDAExtension`` and ``CUDA_HOME`` (each name of an import, each use), ``cpp_extension.load`` /
``load_inline`` with any CUDA evidence (a ``.cu`` source, ``cuda_sources``, ``extra_cuda_cflags``, ``with_cuda``),
any call handing a build ``extra_cuda_cflags`` / ``cuda_sources``, the ``"nvcc"`` key of compile arguments (a dict
key, a subscript, a membership test), nvcc-only options and GPU architecture strings (``-gencode``,
``arch=compute_80,code=sm_80``, ``--use_fast_math``, ``-U__CUDA_NO_HALF_OPERATORS__``: the table is
:data:`ascend_compat.knowledge.extensions.NVCC_OPTIONS`), and the nvcc program itself (``".../bin/nvcc"``,
``os.system("nvcc -V")``). CMake files and C++ sources are read line by line (:func:`on_file`).
"""
from __future__ import annotations

import ast
import re

from ascend_compat.analysis.findings import Finding
from ascend_compat.analysis.rules import device_string
from ascend_compat.analysis.rules.base import MANUAL, PARTIAL, Rule, const_str
from ascend_compat.knowledge import extensions

RULE = Rule('cuda-extension', 'extension', MANUAL, 'custom CUDA extension',
            'CUDA C++ extensions cannot be built or loaded on Ascend.',
            'port the kernel to an AscendC custom op, or use an existing torch_npu op (torch_npu.npu_*); '
            'build C++ parts with torch_npu.utils.cpp_extension.NpuExtension.', order=26)
TRIGGERS = ("cuda", "nvcc", "cpp_extension")
#: nvcc options and architecture names are reported in string literals that start with one
TRIGGER_STRINGS = tuple(o.lower() for o in extensions.NVCC_OPTIONS) + extensions.NVCC_ARCH_HEADS
#: keyword arguments that hand a build CUDA sources or nvcc flags (torch.utils.cpp_extension's names)
CUDA_BUILD_KWARGS = frozenset({"extra_cuda_cflags", "cuda_sources"})
#: state keys of the facts this rule gives the project (see ascend_compat.analysis.project)
FORWARDERS, EXT_MODULES, CUDA_CALLS = RULE.id + ":forwarders", RULE.id + ":ext_modules", RULE.id + ":cuda_calls"
#: state key: names bound to the nvcc program's path (``nvcc_bin = cuda_dir + "/bin/nvcc"``) -> line
NVCC_NAMES = RULE.id + ":nvcc_names"
_HAS_NVCC = RULE.id + ":has_nvcc"
#: calls that run a program given as their first argument
RUNNERS = ("subprocess.check_output", "subprocess.run", "subprocess.Popen", "subprocess.call",
            "subprocess.check_call", "subprocess.getoutput", "subprocess.getstatusoutput", "os.popen", "os.system")
#: build calls that declare an extension module (its name: the first argument or name=)
_DECLARES = ("cpp_extension.CUDAExtension", "cpp_extension.CppExtension", "setuptools.Extension",
             "distutils.core.Extension", "cpp_extension.load", "cpp_extension.load_inline")
_ARCH_HEAD = re.compile(r"(?:-+(?:arch|gencode|gpu-architecture)[= ]?)?(?:arch=)?(?:compute|sm)_\Z")
EXTENSION = {"torch.utils.cpp_extension.CUDA_HOME": "ASCEND_HOME_PATH (CANN toolkit)",
             "torch.utils.cpp_extension.include_paths_cuda": None}


def qualname(q: str, version):
    if q in extensions.BY_QUALNAME and q.endswith("CUDAExtension"):  # load/load_inline: by their arguments
        rec = extensions.BY_QUALNAME[q]
        return rec.rule, rec.verdict, f"{rec.name}: {rec.reason}", rec.advice
    if q in EXTENSION:
        repl = EXTENSION[q]
        return (RULE.id, RULE.handling, f"{q.rsplit('.', 1)[-1]}: {RULE.explanation}",
                f"use {repl}; " + RULE.suggestion if repl and repl not in RULE.suggestion else RULE.suggestion)
    return None


def on_import(v, node, module: str, names=()) -> bool:
    """With project facts: an import of an extension module the project builds from CUDA sources."""
    p = v.project
    if p is None or not p.ext_modules:
        return False
    for full in [module] + [f"{module}.{n}" for n in names]:
        if full in p.ext_modules:
            msg, handling = f"import of {full}, an extension module the project builds from CUDA sources: " \
                + RULE.explanation, RULE.handling
            if v.guarded:  # the except branch is the Ascend path
                msg, handling = msg + " Optional: the import is guarded by except ImportError.", PARTIAL
            v.report(node, RULE.id, msg, RULE.suggestion, handling=handling)
            return True
    return False


def on_attribute(v, node, q) -> None:
    """With project facts: a use of a CUDA extension module the project builds (``ext.forward(...)``);
    optional (partial) when the module was bound by a guarded import."""
    p = v.project
    if q is None or p is None or not p.ext_modules or "." not in q:
        return
    module = q.rsplit(".", 1)[0]
    if module in p.ext_modules and type(node.value) in (ast.Name, ast.Attribute):
        optional = v.is_optional(node)
        v.report(node, RULE.id, f"{q}: a call into the project's CUDA extension module {module}"
                 + ("; optional (bound by a guarded import)" if optional else ""), RULE.suggestion,
                 handling=PARTIAL if optional else RULE.handling)


STRING_ROLES = ("key", "compare", "value")


def on_string(v, node, s: str, role: str) -> None:
    """The ``"nvcc"`` key of extra_compile_args (a dict key, a subscript, ``"nvcc" in args``); a value that is
    an nvcc-only option, a GPU architecture or the nvcc program."""
    if role in ("key", "compare"):
        if s == "nvcc":
            v.report(node, RULE.id, "nvcc compile flags: " + RULE.explanation, RULE.suggestion)
        return
    opt = extensions.nvcc_option(s)
    if opt is not None and not _inside_build(v, node):
        v.report(node, RULE.id, f"nvcc option {opt}: a flag of a CUDA build. {RULE.explanation}", RULE.suggestion)
    elif " " not in s.strip() and extensions.runs_nvcc(s):
        v.report(node, RULE.id, f'"{s}" is the CUDA compiler (nvcc), which Ascend hosts do not have: '
                 + RULE.explanation, RULE.suggestion)


def on_joined(v, node, head: str) -> None:
    """An f-string that starts with an nvcc option or an architecture (``f"arch=compute_{cc},code=sm_{cc}"``)."""
    opt = extensions.nvcc_option(head) or (head if _ARCH_HEAD.match(head) else None)
    if opt is not None and not _inside_build(v, node):
        v.report(node, RULE.id, f"nvcc option {opt}...: a flag of a CUDA build. {RULE.explanation}", RULE.suggestion)


def _inside_build(v, node) -> bool:
    """Whether ``node`` lies in the arguments of a build call already reported (one finding per build call)."""
    pos = (node.lineno, node.col_offset)
    return any(a <= pos <= b for a, b in v.state.get(RULE.id + ":builds", ()))


def _reported_build(v, node) -> None:
    v.state.setdefault(RULE.id + ":builds", []).append(
        ((node.lineno, node.col_offset), (node.end_lineno or node.lineno, node.end_col_offset or 0)))


def _holds_cuda_sources(held, expr) -> bool:
    """A ``.cu`` path, or a variable the cuda-source rule saw filled with some, in a list/sum/comprehension."""
    t = type(expr)
    if t is ast.Constant:
        return type(expr.value) is str and expr.value.endswith((".cu", ".cuh"))
    if t is ast.Name:
        return expr.id in held
    if t in (ast.List, ast.Tuple, ast.Set):
        return any(_holds_cuda_sources(held, e) for e in expr.elts)
    if t is ast.BinOp:
        return _holds_cuda_sources(held, expr.left) or _holds_cuda_sources(held, expr.right)
    if t in (ast.ListComp, ast.GeneratorExp):
        return any(_holds_cuda_sources(held, g.iter) for g in expr.generators)
    return False


def _has_cuda_evidence(v, node) -> bool:
    """Whether a call hands over CUDA code: a ``.cu`` source (or a variable holding some), nvcc flags, with_cuda."""
    for k in node.keywords:
        if k.arg in CUDA_BUILD_KWARGS or (k.arg == "with_cuda" and getattr(k.value, "value", None) is True):
            return True
    held = v.state.get("cuda-source", ())
    return any(_holds_cuda_sources(held, e) for e in node.args) or \
        any(_holds_cuda_sources(held, k.value) for k in node.keywords)


def _declared_name(node):
    for k in node.keywords:
        if k.arg == "name":
            return const_str(k.value)
    return const_str(node.args[0]) if node.args else None


def _project_facts(v, node, q) -> None:
    """What this call tells other modules, and what they tell about it."""
    p = v.project
    if q and p is not None and q in p.builders:
        v.report(node, RULE.id, f"{q.rsplit('.', 1)[-1]}() builds CUDA code or CUDA compile flags ({p.builders[q]}): "
                 + RULE.explanation, RULE.suggestion)
    if q and q.endswith(_DECLARES):
        name = _declared_name(node)
        if name and (q.endswith("CUDAExtension") or _has_cuda_evidence(v, node)):
            v.state.setdefault(EXT_MODULES, set()).add(name)
    elif q and "." in q and _has_cuda_evidence(v, node):
        v.state.setdefault(CUDA_CALLS, set()).add(q)


def _forwarded(v, node) -> bool:
    """Whether a load() call's sources (or its **kwargs) are the parameters of the function it is in."""
    if not v.function_nodes:
        return False
    a = v.function_nodes[-1].args
    params = {p.arg for p in list(getattr(a, "posonlyargs", [])) + list(a.args) + list(a.kwonlyargs)}
    kwargs = a.kwarg.arg if a.kwarg is not None else None
    for k in node.keywords:
        if (k.arg == "sources" and type(k.value) is ast.Name and k.value.id in params) or \
                (k.arg is None and type(k.value) is ast.Name and k.value.id == kwargs):
            return True
    return len(node.args) > 1 and type(node.args[1]) is ast.Name and node.args[1].id in params


def _names_nvcc(value) -> bool:
    """Whether an expression builds the nvcc program's path from a literal (``"nvcc"``, ``d + "/bin/nvcc"``,
    ``os.path.join(home, "bin", "nvcc")``, either branch of a conditional)."""
    for n in ast.walk(value):
        if type(n) is ast.Constant and type(n.value) is str and " " not in n.value.strip() \
                and extensions.runs_nvcc(n.value.lstrip("/\\")):
            return True
    return False


def on_assign(v, node, targets, value, augmented: bool) -> None:
    """A name bound to the nvcc program's path: a run of it is a run of nvcc."""
    if augmented or type(value) not in (ast.Constant, ast.BinOp, ast.IfExp, ast.Call, ast.JoinedStr):
        return
    has = v.state.get(_HAS_NVCC)
    if has is None:
        has = v.state[_HAS_NVCC] = "nvcc" in v.full_text  # (most files never name it: no walk of their values)
    if not has or not _names_nvcc(value):
        return
    for t in targets:
        if type(t) is ast.Name:
            v.state.setdefault(NVCC_NAMES, {})[t.id] = node.lineno
            v.dynamic_names.add(t.id)  # a run of it may hold no trigger word


def runs_nvcc(v, call) -> bool:
    """Whether a process-running call runs nvcc: its command starts with an nvcc literal or a name bound to
    the nvcc path (``subprocess.check_output([nvcc_bin, "-V"])``)."""
    if not call.args or type(call.func) not in (ast.Name, ast.Attribute) or v.qual(call.func) not in RUNNERS:
        return False
    first = call.args[0]
    el = first.elts[0] if type(first) in (ast.List, ast.Tuple) and first.elts else first
    el = el.right if type(el) is ast.BinOp else el  # cuda_dir + "/bin/nvcc"
    s = const_str(el)
    if s is not None:
        return extensions.runs_nvcc(s.lstrip("/\\"))
    return type(el) is ast.Name and el.id in v.state.get(NVCC_NAMES, ())


def on_call(v, node, q, attr) -> None:
    """``cpp_extension.load(...)`` / ``load_inline(...)`` with any CUDA evidence; any other call handing a build
    CUDA sources or nvcc flags; ``os.system("nvcc ...")`` / ``subprocess.run(["nvcc", ...])`` / a run of a name
    bound to the nvcc path; with project facts, a call of another module's CUDA-building helper, and a load()
    its callers feed CUDA sources."""
    _project_facts(v, node, q)
    if q and (q.startswith("subprocess.") or q in ("os.system", "os.popen")) and node.args:
        first = node.args[0]
        for el in (first.elts if type(first) in (ast.List, ast.Tuple) else [first])[:1]:
            s = const_str(el)
            if s is not None and " " in s.strip() and extensions.runs_nvcc(s):
                v.report(el, RULE.id, "runs nvcc, the CUDA compiler, which Ascend hosts do not have: "
                         + RULE.explanation, RULE.suggestion)
            elif type(el) is ast.Name and el.id in v.state.get(NVCC_NAMES, ()):
                v.report(el, RULE.id, f"runs nvcc, the CUDA compiler (the path {el.id} holds, line "
                         f"{v.state[NVCC_NAMES][el.id]}), which Ascend hosts do not have: " + RULE.explanation,
                         RULE.suggestion)
    if q and q.endswith("cpp_extension.CUDAExtension"):
        _reported_build(v, node)  # reported by its name (qualname)
    if not q or not (q.endswith("cpp_extension.load") or q.endswith("cpp_extension.load_inline")):
        kw = next((k for k in node.keywords if k.arg in CUDA_BUILD_KWARGS), None)
        if kw is not None:
            _reported_build(v, node)
            v.report(node, RULE.id, f"{kw.arg}= hands a build CUDA code or nvcc flags: {RULE.explanation}",
                     RULE.suggestion)
        return
    kws = node.keywords
    cu = any(k.arg in CUDA_BUILD_KWARGS for k in kws)
    for s in [k.value for k in kws if k.arg == "sources"] + list(node.args[1:2]):
        for el in (s.elts if type(s) in (ast.List, ast.Tuple) else [s]):
            val = const_str(el)
            if val is not None and val.endswith((".cu", ".cuh")):
                cu = True
            elif type(el) is ast.Name and el.id in v.state.get("cuda-source", ()):
                cu = True  # a variable the cuda-source rule saw filled with CUDA sources
    rec = extensions.BY_QUALNAME["torch.utils.cpp_extension." + q.rsplit(".", 1)[-1]]
    if cu or any(k.arg == "with_cuda" and getattr(k.value, "value", None) is True for k in kws):
        _reported_build(v, node)
        v.report(node, rec.rule, f"{q.rsplit('.', 1)[-1]}() builds CUDA sources: {rec.reason}", rec.advice,
                 handling=rec.verdict)
    elif _forwarded(v, node) and v.function_stack and v.function_stack[0]:
        outer = v.function_stack[0]
        v.state.setdefault(FORWARDERS, {})[outer] = v.function_nodes[0].lineno
        qual = f"{v.module_name}.{outer}"
        caller = v.project.cuda_forwarders.get(qual) if v.project is not None else None
        if caller is not None:
            _reported_build(v, node)
            v.report(node, rec.rule, f"{q.rsplit('.', 1)[-1]}() builds the sources {outer}()'s callers give it, "
                     f"CUDA sources among them: {rec.reason}", rec.advice, handling=rec.verdict)


# ---------------------------------------------------------------- CMake and C++ files (line by line)
FILE_KINDS = ("cmake", "cpp")
# Linear in the line: every open-ended run is bounded or starts only at a token's start (a 500 KB line
# of repeated keywords took minutes: each occurrence scanned to the end of the line and back).
_CMAKE = re.compile(r"enable_language\s*\(\s*CUDA|project\s*\([^)]{0,1000}\bCUDA\b|find_package\s*\(\s*(?:CUDA|CUDAToolkit)\b"
                    r"|cuda_add_(?:library|executable)|CMAKE_CUDA_\w+|CUDA_ARCHITECTURES|(?<!\S)\S+?\.cuh?\b|\bnvcc\b"
                    r"|CUDA::\w+", re.I)
_CPP = re.compile(r"#\s*include\s*[<\"](?:cuda\w*\.h|cublas\w*\.h|cudnn\w*\.h|curand\w*\.h|cusparse\w*\.h|nccl\.h"
                  r"|ATen/cuda/|c10/cuda/|thrust/|cub/)[^>\"]{0,500}[>\"]|\bcuda[A-Z]\w*\s*\(|\b(?:at|c10)::cuda::\w+"
                  r"|\bkCUDA\b|DeviceType::CUDA\b|<<<")
#: a libtorch C++ device reference: a local edit, not a CUDA build (the Python shim does not reach C++)
_CPP_DEVICE = re.compile(r"\bkCUDA\b|DeviceType::CUDA\b")
_FILE_ADVICE = ("build with the CANN toolchain (AscendC ops, torch_npu.utils.cpp_extension.NpuExtension); "
                "replace CUDA runtime calls with ACL (aclrt*) / c10 PrivateUse1 APIs.")


def on_file(path: str, kind: str, text: str) -> list:
    """CUDA in a CMake build or C++ source, one finding per line (a C++ ``kCUDA`` device is a
    device-string finding: a local edit, not a CUDA build)."""
    low = text.lower()
    if "cuda" not in low and not ("nvcc" in text if kind == "cmake" else "<<<" in text):
        return []
    rx = _CMAKE if kind == "cmake" else _CPP
    out = []
    for i, line in enumerate(text.split("\n"), 1):
        m = rx.search(line.split("#", 1)[0] if kind == "cmake" else line.split("//", 1)[0])
        if not m:
            continue
        what = m.group(0).strip()
        if kind == "cpp" and _CPP_DEVICE.fullmatch(what):
            d = device_string.RULE
            out.append(Finding(path, i, m.start() + 1, i, m.end() + 1, d.id, d.category, MANUAL,
                               f"C++ CUDA device `{what}`: libtorch code is outside the Python shim's reach",
                               "use c10::DeviceType::PrivateUse1 (the npu device of torch_npu's C++ API)."))
            continue
        out.append(Finding(path, i, m.start() + 1, i, m.end() + 1, RULE.id, RULE.category, RULE.handling,
                           f"CUDA build/code reference `{what}`: {RULE.explanation}", _FILE_ADVICE))
    return out
