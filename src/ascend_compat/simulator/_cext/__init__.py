"""Optional C++ part of the simulated NPU: the device guard, the backend hooks, argument conversion.

Contract: :func:`load_hooks` returns the loaded module once its PrivateUse1 backend hooks are
the ones registered in this process (they give torch a pinned host allocator and
``isPinnedPtr``, which torch's Python hooks cannot), or ``None`` (reason in
:func:`hooks_unavailable_reason`); it must be called before torch's Python hooks are
registered (one registration per process). :func:`load_guard(num_devices) <load_guard>` returns an object with
``current_device() -> int``, ``set_device(i)`` and ``device_count() -> int`` once a
PrivateUse1 device guard reporting ``num_devices`` devices is the one registered in
this process, or ``None`` (the reason is kept in :func:`unavailable_reason`).
It must be called *before* ``_setup_privateuseone_for_python_backend``: whichever guard
is registered first stays, and the Python guard registration then returns False and
is ignored. After success, the simulator's ``current_device``/``set_device`` must go
through the returned object so C++ (``c10::DeviceGuard``, autograd device threads) and
Python agree on the current device.

Why a C++ guard at all
    ``torch._C._acc.DeviceGuard`` (the guard a pure-Python backend can register)
    hard-codes ``deviceCount() == 1``, ``getDevice() == index 0`` and ignores
    ``setDevice``. The autograd engine sizes one ready queue per device from the
    registered guards the first time a backward pass reaches a device, so
    ``backward()`` through tensors on ``npu:1`` hits an INTERNAL ASSERT on the
    ready-queue size. Nothing in Python can change that count.

What it is
    Two small C++ files (our own code) built into one library with
    ``torch.utils.cpp_extension.load`` at the first install (once per torch build).
    ``sim_guard.cpp`` tracks the current device and the current stream per thread, gives
    streams unique ids and events host timestamps; allocation, kernels and memory
    stay in the simulator's Python code, so every device index is honoured there.
    With the hooks it registers a PrivateUse1 allocator that serves zero-byte
    requests only (torch's quantized factories ask it for a quantized npu tensor's
    storage, which the simulator then replaces by accounted memory: ``_quantized``)
    and refuses any other size with a clear error. ``sim_fast.cpp`` converts the generic
    kernel's arguments to host aliases (``host_args``) and retags tensors (``retag``), the
    steps ``_dispatch``/``_memory`` otherwise run in Python; it gives up on every case the
    Python path treats specially, which then handles it.
    ``sim_guard.cpp`` includes only c10 and pybind11 headers, ``sim_fast.cpp`` ATen's DLPack
    and torch's Python-variable headers; ninja compiles the two in parallel, so the one-time
    build takes about 15 s on two quiet cores; later loads import the cached library directly
    (no compiler, no ninja needed). The cache lives in the user's torch extension
    cache (``TORCH_EXTENSIONS_DIR`` or ``~/.cache/torch_extensions``) under a name
    keyed by torch version, torch build, Python version and the sources' hashes, because
    a C++ extension is ABI-locked to one torch build.

Exactly one guard is active. torch keeps one guard pointer per device type.
``torch._C._acc.register_python_privateuseone_device_guard`` (called by
``_setup_privateuseone_for_python_backend``) registers nothing and returns False when
a PrivateUse1 guard already exists, whereas a static ``C10_REGISTER_GUARD_IMPL`` stores
its guard unconditionally when the library is loaded: loaded before the backend set-up it
would win, loaded after it would silently replace the Python guard (possibly after the
autograd engine sized its queues from it), and either way before the device count is
known. So registration here is explicit: ``register_guard(n)`` is called after loading,
before the set-up, and refuses if any other guard is registered; ``is_active()`` checks
the registry holds this guard. The simulator then skips its Python guard.

Alternative considered: device-index virtualisation (every process uses physical
index 0 and the simulator rewrites ``npu:r`` to ``npu:0``). It needs no compiler, but
tensors would report ``npu:0`` where the script asked for ``npu:r`` (so checks like
``p.device == torch.device(f"npu:{local_rank}")`` and DDP's ``device_ids`` would see
the lie), and a single process using ``npu:0`` and ``npu:1`` together cannot be
expressed at all. The guard gives real indices in both cases, so it was chosen.

Limits
    - Without a C++ compiler (``$CXX`` or ``c++``), Python headers, torch's C++
      headers or ninja on a first build, or when that build fails, no guard: the
      simulator offers one device and warns why when more were requested (a failed
      build is retried at the next install), and torch's Python backend hooks are
      used (no pinned host allocator). The library is loaded at every install, for
      the hooks, so one device builds it too (once).
    - The count is fixed once registered (the autograd engine keeps its queue count
      for the process lifetime); at most 64 devices.
    - Streams are ids and events are host timestamps: execution stays synchronous.
    - If some other accelerator's backward already ran in this process the engine
      has sized its queues without these devices (not possible on CPU-only torch).
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import re
import shlex
import shutil
import sys
import sysconfig
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from ascend_compat._log import get_logger

log = get_logger("simulator")

_SOURCES = (Path(__file__).with_name("sim_guard.cpp"), Path(__file__).with_name("sim_fast.cpp"))
_MARKER = "ascend_compat_built.txt"

_lock = threading.Lock()
_guard: Any = None
_module: Any = None
_reason: str | None = None
_hooks: Any = None
_hooks_reason: str | None = None
_info: dict[str, Any] = {}


def load_guard(num_devices: int) -> Any | None:
    """Build if needed, load and register the multi-device guard for ``num_devices`` devices.

    Returns the guard object (``current_device()``, ``set_device(i)``,
    ``device_count()``, ``is_active()``) or None when it cannot be had here; the
    reason is logged and returned by :func:`unavailable_reason` (the simulator warns with it).
    Idempotent for the same ``num_devices``; a different count in the same process
    returns None (the count cannot change once the autograd engine has seen it).
    """
    global _guard, _reason
    if not isinstance(num_devices, int) or num_devices < 1:
        raise ValueError(f"num_devices must be a positive int, got {num_devices!r}")
    with _lock:
        if _guard is not None and _guard.device_count() == num_devices:
            return _guard
        module, _reason = _load_and(lambda m: m.register_guard(num_devices))
        if module is not None:
            _guard = module
            return module
    # the simulator turns this into a SimulatedDeviceCountWarning with the fix (see _guard)
    log.info("simulated NPU: cannot offer %d devices, only 1: %s", num_devices, _reason)
    return None


def load_hooks() -> Any | None:
    """Build if needed, load and register the backend hooks (pinned host memory); return the
    module, or None when it cannot be had here (reason: :func:`hooks_unavailable_reason`).
    Idempotent."""
    global _hooks, _hooks_reason
    with _lock:
        if _hooks is not None:
            return _hooks
        module, _hooks_reason = _load_and(_register_hooks)
        if module is not None:
            _hooks = module
            return module
    log.info("simulated NPU: no pinned host memory: %s", _hooks_reason)
    return None


def _load_and(register) -> tuple[Any | None, str | None]:
    """Build if needed, load, and call ``register(module)``: ``(module, None)``, or ``(None, why)``
    when the toolchain, the build or the registration failed."""
    try:
        module = _load_module()
        register(module)
    except _Unavailable as exc:
        return None, str(exc)
    except Exception as exc:  # a failed build or a refused registration
        return None, f"{type(exc).__name__}: {exc}"
    return module, None


def _register_hooks(module: Any) -> None:
    if not module.register_hooks():
        raise RuntimeError("other PrivateUse1 backend hooks are already registered in this process")


def loaded_module() -> Any | None:
    """The extension module if this process has already loaded it (never builds), else None."""
    return _module


def hooks_unavailable_reason() -> str | None:
    """Why the last :func:`load_hooks` returned None (None after a success or before any call)."""
    return _hooks_reason


def ensure_built() -> str | None:
    """Build (or find cached) the guard library without registering it; return None on
    success or the reason it cannot be had. For launchers and tests that want the one-time
    build done before starting several processes."""
    global _reason
    with _lock:
        try:
            _load_module()
        except _Unavailable as exc:
            _reason = str(exc)
        except Exception as exc:
            _reason = f"{type(exc).__name__}: {exc}"
        else:
            return None
    return _reason


def unavailable_reason() -> str | None:
    """Why the last :func:`load_guard` returned None (None after a success or before any call)."""
    return _reason


def guard_info() -> dict[str, Any]:
    """Where the guard library is and how it was obtained: keys ``path``, ``name``,
    ``built_seconds`` (float if built by this process, else None). Empty before loading."""
    return dict(_info)


class _Unavailable(RuntimeError):
    """The toolchain needed for the first build is missing."""


def extension_name() -> str:
    """Cache key of the compiled guard: torch version + a hash of everything the ABI depends on."""
    import torch

    key = "\n".join(
        [
            torch.__version__,
            str(getattr(torch.version, "git_version", "")),
            os.path.dirname(torch.__file__),
            sys.version,
            sysconfig.get_platform(),
            *(hashlib.sha256(source.read_bytes()).hexdigest() for source in _SOURCES),
        ]
    )
    version = re.sub(r"[^0-9A-Za-z]+", "_", torch.__version__)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return f"ascend_compat_sim_guard_{version}_{digest}"


def build_directory() -> Path:
    """The per-torch-build cache directory, under the user's torch extension cache."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or _default_build_root()
    return Path(root) / extension_name()


def _default_build_root() -> str:
    # What torch.utils.cpp_extension.get_default_build_root() returns, without importing
    # cpp_extension (~0.1 s) when the library is already cached.
    try:
        from torch._appdirs import user_cache_dir

        return os.path.realpath(user_cache_dir(appname="torch_extensions"))
    except ImportError:
        with _quiet_cpp_extension_import():
            import torch.utils.cpp_extension as cpp_extension
        return cpp_extension.get_default_build_root()


def _load_module() -> Any:
    global _module
    if _module is None:
        _module = _find_or_build()
    return _module


def _find_or_build() -> Any:
    name = extension_name()
    directory = build_directory()
    directory.mkdir(parents=True, exist_ok=True)
    with _exclusive(directory):
        library = _cached_library(directory)
        if library is not None:
            module = _import_library(library)
            _info.update(path=str(library), name=name, built_seconds=None)
            return module
        problem = _toolchain_problem()
        if problem:
            raise _Unavailable(problem)
        try:
            return _build(name, directory)
        except Exception as exc:
            log.debug("simulated NPU: guard build output:\n%s", exc)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise _Unavailable(
                f"building the multi-device guard failed ({first}); rerun with "
                f"ASCEND_COMPAT_LOG_LEVEL=DEBUG to see the compiler output"
            ) from exc


def _cached_library(directory: Path) -> Path | None:
    marker = directory / _MARKER
    if not marker.is_file():
        return None
    library = directory / marker.read_text().strip()
    return library if library.is_file() else None


def _import_library(path: Path) -> Any:
    module_name = path.name.split(".", 1)[0]
    spec = importlib.util.spec_from_file_location(module_name, str(path))
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot import the simulated NPU guard from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(name: str, directory: Path) -> Any:
    log.warning(
        "simulated NPU: building its C++ part (device guard, backend hooks, argument conversion) once "
        "for torch %s (about 15-40 s; cached in %s)", _torch_version(), directory,
    )
    with _quiet_cpp_extension_import():
        import torch.utils.cpp_extension as cpp_extension
    start = time.perf_counter()
    module = cpp_extension.load(
        name=name,
        sources=[str(source) for source in _SOURCES],
        build_directory=str(directory),
        extra_cflags=["-O2"],
        verbose=False,
    )
    seconds = time.perf_counter() - start
    library = Path(module.__file__)
    tmp = directory / (_MARKER + f".{os.getpid()}.tmp")
    tmp.write_text(library.name + "\n")
    os.replace(tmp, directory / _MARKER)
    _info.update(path=str(library), name=name, built_seconds=seconds)
    log.info("simulated NPU: built its C++ part in %.1f s (%s)", seconds, library)
    return module


def _toolchain_problem() -> str | None:
    """A sentence naming what is missing for the first build, or None when all is there."""
    import torch

    compiler = os.environ.get("CXX", "c++")
    executable = (shlex.split(compiler) or ["c++"])[0]  # CXX may be "ccache g++"
    if shutil.which(executable) is None:
        return (
            f"the simulated NPU's C++ part (multi-device guard, pinned host memory) is "
            f"built once, and no C++ compiler was found (looked for {compiler!r}; set CXX or install "
            f"g++ or clang)"
        )
    python_h = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not python_h.is_file():
        return (
            f"building the simulated NPU's multi-device guard needs the Python development "
            f"headers ({python_h} is missing; install python3-dev or the matching package)"
        )
    header = Path(torch.__file__).parent / "include" / "c10" / "core" / "impl"
    if not (header / "DeviceGuardImplInterface.h").is_file():
        return (
            f"this torch installation has no C++ headers ({header} is missing), so the "
            f"simulated NPU's multi-device guard cannot be built"
        )
    with _quiet_cpp_extension_import():
        import torch.utils.cpp_extension as cpp_extension
    if not cpp_extension.is_ninja_available():
        return (
            "building the simulated NPU's multi-device guard needs ninja "
            "(pip install ninja)"
        )
    return None


@contextlib.contextmanager
def _exclusive(directory: Path) -> Iterator[None]:
    """Hold an OS file lock on ``directory`` (released by the kernel if this process dies).

    All our builds run under it, so a ``lock`` file left by torch's own FileBaton while
    we hold it comes from a killed build and would make every later build wait forever.
    """
    try:
        import fcntl
    except ImportError:  # not POSIX: torch's own FileBaton is the only lock
        yield
        return
    with open(directory / ".ascend_compat.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            stale = directory / "lock"
            if stale.exists():
                stale.unlink()
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def _quiet_cpp_extension_import() -> Iterator[None]:
    # A CUDA build of torch logs "No CUDA runtime is found" when cpp_extension is
    # imported on a machine without CUDA; irrelevant for a C++-only extension.
    logger = logging.getLogger("torch.utils.cpp_extension")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _torch_version() -> str:
    import torch

    return torch.__version__
