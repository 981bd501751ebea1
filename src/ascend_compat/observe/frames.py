"""Where user code called an op: the innermost stack frame outside torch, ascend_compat and the
standard library (:func:`user_frame`), as a :class:`Frame` for reports; or, for tools that name the
script's own line rather than a library's (``plan``), the innermost frame of the script itself
(:class:`ScriptFrames`: library code in site-packages is skipped too)."""
from __future__ import annotations

import os
import sys
import sysconfig
from types import FrameType
from typing import Dict, NamedTuple, Optional, Tuple, Union

from ascend_compat._files import display_path


class Frame(NamedTuple):
    """A user stack frame: ``file``, ``line``, ``function``."""

    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{display_path(self.file)}:{self.line} in {self.function}"


def _skip_dirs() -> Tuple[str, ...]:
    import torch

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # ascend_compat/
    # the standard library where it really is: in a virtual environment sysconfig's "stdlib" is the
    # environment's lib/pythonX.Y, which holds site-packages and so every library
    dirs = {os.path.dirname(torch.__file__), package, os.path.dirname(os.__file__),
            os.path.dirname(sysconfig.__file__)}
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs)


_SKIP: Optional[Tuple[str, ...]] = None
_skip_cache: Dict[str, bool] = {}


def user_frame(start: Union[int, FrameType] = 1) -> Optional[Tuple[str, int, str]]:
    """``(file, line, function)`` of the innermost caller outside torch, ascend_compat and the stdlib
    (None if every frame is inside them), walking out from ``start``: a depth below the caller, or a
    frame. Cheap enough for the first call of an op, not for every call."""
    global _SKIP
    if _SKIP is None:
        _SKIP = _skip_dirs()
    frame = sys._getframe(start) if isinstance(start, int) else start
    cache = _skip_cache
    while frame is not None:
        fname = frame.f_code.co_filename
        skip = cache.get(fname)
        if skip is None:
            if fname.startswith("<"):  # "<frozen runpy>" is stdlib; "<string>", "<stdin>" are user code
                skip = fname.startswith("<frozen")
            else:
                skip = os.path.realpath(fname).startswith(_SKIP)
            cache[fname] = skip
        if not skip:
            return fname, frame.f_lineno, frame.f_code.co_name
        frame = frame.f_back
    return None


def library_caller(start: Union[int, FrameType], known: Dict[Tuple[str, str], str]) -> str:
    """The label ``known[(file suffix, function)]`` of the innermost known library function on the stack
    from ``start`` out (``""`` when none): which library call issued an op on the user's behalf."""
    frame = sys._getframe(start) if isinstance(start, int) else start
    while frame is not None:
        code = frame.f_code
        for (suffix, function), label in known.items():
            if code.co_name == function and code.co_filename.replace("\\", "/").endswith(suffix):
                return label
        frame = frame.f_back
    return ""


_KERNEL_FILE: Optional[str] = None
_kernel_files: Dict[str, bool] = {}


def _is_kernel_file(fname: str) -> bool:
    found = _kernel_files.get(fname)
    if found is None:
        found = _kernel_files[fname] = os.path.realpath(fname) == _KERNEL_FILE
    return found


def user_frame_and_kernel(start: Union[int, FrameType] = 1) -> Tuple[Optional[Tuple[str, int, str]],
                                                                      Optional[FrameType]]:
    """:func:`user_frame`, and the frame of the simulated NPU's kernel for a ``torch_npu`` fused op when the
    op runs inside one (its CPU reference's pieces are seen one by one, where torch_npu runs one kernel;
    the kernel frame's locals hold ``reference`` and the call's ``args``/``kwargs``), else None."""
    global _SKIP, _KERNEL_FILE
    if _SKIP is None:
        _SKIP = _skip_dirs()
    if _KERNEL_FILE is None:
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        _KERNEL_FILE = os.path.realpath(os.path.join(package, "simulator", "torch_npu", "_op_registry.py"))
    frame = sys._getframe(start) if isinstance(start, int) else start
    cache = _skip_cache
    kernel = None
    while frame is not None:
        code = frame.f_code
        fname = code.co_filename
        skip = cache.get(fname)
        if skip is None:
            if fname.startswith("<"):
                skip = fname.startswith("<frozen")
            else:
                skip = os.path.realpath(fname).startswith(_SKIP)
            cache[fname] = skip
        if not skip:
            return (fname, frame.f_lineno, code.co_name), kernel
        if code.co_name == "kernel" and _is_kernel_file(fname):
            kernel = frame  # the outermost one wins: a reference may call another fused op
        frame = frame.f_back
    return None, kernel


class ScriptFrames:
    """The innermost frame of a script's own code, as ``"path:line"``: a frame under one of ``roots`` (the
    script's directory; ascend_compat's own files excepted), or outside torch, ascend_compat, the standard
    library, installed libraries (``site-packages``) and generated code (``<string>``). When no such frame
    is on the stack, the innermost frame outside ascend_compat stands in (a library's line beats none).
    Decisions are cached per code object."""

    def __init__(self, roots=()) -> None:
        global _SKIP
        if _SKIP is None:
            _SKIP = _skip_dirs()
        self._roots = tuple(os.path.join(os.path.realpath(r), "") for r in roots)
        self._own = os.path.join(os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "")
        self._cache: Dict[object, Tuple[bool, bool]] = {}  # code -> (script's own, ascend_compat's)

    def _judge(self, code) -> Tuple[bool, bool]:
        name = code.co_filename
        if name.startswith("<"):
            return False, False
        real = os.path.realpath(name)
        own = real.startswith(self._own)
        if real.startswith(self._roots):
            return not own, own
        return not (real.startswith(_SKIP) or "site-packages" in real), own

    def site(self, start: Union[int, FrameType] = 1) -> str:
        """``"path:line"`` of the script's innermost frame from ``start`` out (see the class docstring),
        ``""`` when every frame is ascend_compat's."""
        frame = sys._getframe(start) if isinstance(start, int) else start
        cache = self._cache
        fallback = None
        while frame is not None:
            code = frame.f_code
            verdict = cache.get(code)
            if verdict is None:
                verdict = cache[code] = self._judge(code)
            if verdict[0]:
                return f"{code.co_filename}:{frame.f_lineno}"
            if fallback is None and not verdict[1]:
                fallback = f"{code.co_filename}:{frame.f_lineno}"
            frame = frame.f_back
        return fallback or ""
