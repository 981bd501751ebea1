"""``torch.utils.cpp_extension`` under the shim: CUDA headers and CUDA builds.

``include_paths(device_type="cuda")`` returns torch's own include paths (what transfer_to_npu's
``"npu"`` rewrite yields) instead of failing on a missing ``CUDA_HOME``. Building CUDA code
(``CUDAExtension``, ``load``/``load_inline`` with ``.cu`` sources or ``cuda_sources``) cannot work on an
Ascend machine without a CUDA toolkit: it raises an error saying what to do instead. With a CUDA
toolkit present (``CUDA_HOME`` found) these calls are left to torch. CPU builds (``CppExtension``,
``load`` of ``.cpp`` files) are never touched.
"""
from __future__ import annotations

from typing import Any

from ascend_compat.cuda_shim.registry import Patch, hit, make_wrapper
from ascend_compat.knowledge import extensions

CUDA_SUFFIXES = (".cu", ".cuh")


class CUDAExtensionUnsupported(RuntimeError):
    """A CUDA C++/CUDA extension was to be built on an NPU machine without a CUDA toolkit."""


def _cuda_build_error(what: str, record: str = "CUDAExtension") -> CUDAExtensionUnsupported:
    """The refusal of a CUDA build: the knowledge record's reason and advice."""
    return CUDAExtensionUnsupported(
        extensions.refusal(what, extensions.BY_NAME[record])
        + " `ascend-compat check` lists the CUDA extensions a project builds.")


def _no_cuda_toolkit() -> bool:
    import torch.utils.cpp_extension as ext

    return getattr(ext, "CUDA_HOME", None) is None


def _include_paths(original: Any) -> Any:
    def include_paths(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("device_type") == "cuda":
            kwargs["device_type"] = "cpu"
            hit("cpp_extension.include_paths")
        elif args and args[0] == "cuda":
            args = ("cpu",) + args[1:]
            hit("cpp_extension.include_paths")
        return original(*args, **kwargs)

    return make_wrapper(original, include_paths)


def _cuda_extension(original: Any) -> Any:
    def CUDAExtension(*args: Any, **kwargs: Any) -> Any:
        if _no_cuda_toolkit():
            raise _cuda_build_error("torch.utils.cpp_extension.CUDAExtension")
        return original(*args, **kwargs)

    return make_wrapper(original, CUDAExtension)


def _has_cuda_sources(sources: Any) -> bool:
    if isinstance(sources, (str, bytes)) or sources is None:
        sources = [sources] if sources else []
    return any(str(s).endswith(CUDA_SUFFIXES) for s in sources)


def _load(original: Any) -> Any:
    def load(name: Any, sources: Any, *args: Any, **kwargs: Any) -> Any:
        if _has_cuda_sources(sources) and _no_cuda_toolkit():
            raise _cuda_build_error(f"torch.utils.cpp_extension.load({name!r}) with .cu sources",
                                    "load(..., extra_cuda_cflags=...)")
        return original(name, sources, *args, **kwargs)

    return make_wrapper(original, load)


def _load_inline(original: Any) -> Any:
    def load_inline(name: Any, cpp_sources: Any, cuda_sources: Any = None, *args: Any, **kwargs: Any) -> Any:
        if cuda_sources and _no_cuda_toolkit():
            raise _cuda_build_error(f"torch.utils.cpp_extension.load_inline({name!r}, cuda_sources=...)",
                                    "load_inline(..., cuda_sources=...)")
        return original(name, cpp_sources, cuda_sources, *args, **kwargs)

    return make_wrapper(original, load_inline)


def patches() -> list:
    mod = "torch.utils.cpp_extension"
    why = "CUDA builds on an NPU machine: clear error with what to do"
    return [
        Patch(f"{mod}:include_paths", _include_paths, "include_paths(device_type='cuda') without CUDA_HOME",
              wrap=True, optional=True, defer=True, concept="cpp_extension"),
        Patch(f"{mod}:CUDAExtension", _cuda_extension, why, wrap=True, optional=True, defer=True,
              concept="cpp_extension"),
        Patch(f"{mod}:load", _load, why, wrap=True, optional=True, defer=True, concept="cpp_extension"),
        Patch(f"{mod}:load_inline", _load_inline, why, wrap=True, optional=True, defer=True,
              concept="cpp_extension"),
    ]
