"""``torch.cuda.*``: every public name mapped to ``torch.npu``, emulated, or an explanatory error.

The decisions are the knowledge records (:mod:`ascend_compat.knowledge.cuda_names`, re-exported as
:mod:`ascend_compat.cuda_shim.mapping.cuda_names`); this module builds the
objects. ``torch.cuda.is_available()`` answers for the NPU, except inside :func:`real_cuda`
(used around library detection points), where it gives the real CUDA answer.
"""
from __future__ import annotations

import contextlib
import os
import threading
import types
import warnings
from typing import Any, Callable

from ascend_compat.cuda_shim import dtype_manager
from ascend_compat.cuda_shim._device_type import make_stand_in
from ascend_compat.cuda_shim.devices import target, translate
from ascend_compat.cuda_shim.mapping import cuda_names as table
from ascend_compat.cuda_shim.patches._common import all_device_args
from ascend_compat.cuda_shim.patches.tensor import LEGACY_TENSOR_TYPES
from ascend_compat.cuda_shim.registry import Patch, hit, make_wrapper

__all__ = ["CudaApiUnsupportedError", "real_cuda", "seeing_real_cuda", "patches"]

_TRUTH = threading.local()
DEFAULT_CAPABILITY = (8, 0)


class CudaApiUnsupportedError(NotImplementedError):
    """A ``torch.cuda`` API with no NPU counterpart was used; the message says what to do."""


@contextlib.contextmanager
def real_cuda():
    """Inside, ``torch.cuda.is_available()`` gives the real CUDA answer (this thread only)."""
    _TRUTH.depth = getattr(_TRUTH, "depth", 0) + 1
    try:
        yield
    finally:
        _TRUTH.depth -= 1


def seeing_real_cuda() -> bool:
    return getattr(_TRUTH, "depth", 0) > 0


def capability_default() -> tuple[int, int]:
    """``ASCEND_COMPAT_DEVICE_CAPABILITY="major.minor"`` or (8, 0) (also, with a warning, for an invalid value)."""
    text = os.environ.get("ASCEND_COMPAT_DEVICE_CAPABILITY", "").strip()
    if not text:
        return DEFAULT_CAPABILITY
    try:
        major, minor = (int(p) for p in text.split("."))
        return major, minor
    except ValueError:  # a typo must not stop the user's program
        from ascend_compat import _config

        _config.warn_invalid("ASCEND_COMPAT_DEVICE_CAPABILITY", text, "expected 'major.minor' (for example '8.0')",
                             f"using {DEFAULT_CAPABILITY[0]}.{DEFAULT_CAPABILITY[1]}")
        return DEFAULT_CAPABILITY


# --------------------------------------------------------------------------- stubs

def _unsupported_message(name: str, advice: str) -> str:
    return f"torch.cuda.{name} has no Ascend NPU counterpart: {advice}"


def unsupported_function(name: str, advice: str) -> Callable:
    def stub(*args: Any, **kwargs: Any) -> Any:
        raise CudaApiUnsupportedError(_unsupported_message(name, advice))

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = _unsupported_message(name, advice)
    return stub


class _UnsupportedModule(types.ModuleType):
    def __init__(self, name: str, advice: str) -> None:
        super().__init__(f"torch.cuda.{name}", _unsupported_message(name, advice))
        self.__ascend_compat_advice__ = advice

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise CudaApiUnsupportedError(
            f"{self.__name__}.{attr}: {self.__name__} has no Ascend NPU counterpart: {self.__ascend_compat_advice__}"
        )


def _missing_on_backend(name: str, npu_name: str) -> Callable:
    from ascend_compat import backend

    return unsupported_function(
        name, f"the NPU backend in use ({backend.target_backend()}) does not provide torch.npu.{npu_name}")


# --------------------------------------------------------------------------- emulations

class CudaLikeProperties:
    """torch.npu device properties with the fields CUDA scripts read filled in."""

    def __init__(self, npu_props: Any, capability: tuple[int, int]) -> None:
        self._props = npu_props
        self.major, self.minor = capability
        self.name = getattr(npu_props, "name", "Ascend NPU")
        self.total_memory = int(getattr(npu_props, "total_memory", 0))
        self.multi_processor_count = int(getattr(npu_props, "multi_processor_count", 0)
                                         or getattr(npu_props, "cube_core_num", 0) or 1)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._props, name)

    def __repr__(self) -> str:
        return (f"_CudaLikeProperties(name={self.name!r}, major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1 << 20)}MB, multi_processor_count={self.multi_processor_count})")


def _emulations(torch: Any, npu: Any, cuda_original: Any) -> dict[str, Any]:
    original_is_available = cuda_original.is_available

    def is_available() -> bool:
        if getattr(_TRUTH, "depth", 0):
            return original_is_available()
        hit("torch.cuda.is_available")
        return npu.is_available()

    original_device_count = cuda_original.device_count

    def device_count() -> int:
        if getattr(_TRUTH, "depth", 0):
            return original_device_count()
        hit("torch.cuda.device_count")
        return npu.device_count()

    def get_device_capability(device: Any = None) -> tuple[int, int]:
        cap = None
        getter = getattr(npu, "get_device_capability", None)
        if getter is not None:
            cap = getter(translate(device))
        if cap is None:
            hit("torch.cuda.get_device_capability:default")
            return capability_default()
        return tuple(cap)

    def get_device_properties(device: Any = None) -> CudaLikeProperties:
        dev = translate(device)
        props = npu.get_device_properties(dev if dev is not None else npu.current_device())
        major = getattr(props, "major", None)
        cap = (props.major, props.minor) if isinstance(major, int) and major > 0 else get_device_capability(dev)
        return CudaLikeProperties(props, cap)

    def device_memory_used(device: Any = None) -> int:
        free, total = npu.mem_get_info(translate(device))
        return total - free

    def caching_allocator_enable(value: bool = True) -> None:
        return None

    def is_tf32_supported() -> bool:
        return hasattr(getattr(npu, "matmul", None), "allow_hf32")

    out: dict[str, Any] = {
        "is_available": is_available,
        "device_count": device_count,
        "get_device_capability": get_device_capability,
        "get_device_properties": get_device_properties,
        "device_memory_used": device_memory_used,
        "caching_allocator_enable": caching_allocator_enable,
        "get_arch_list": lambda: [],
        "get_gencode_flags": lambda: "",
        "has_half": True,
        "has_magma": False,
        "is_tf32_supported": is_tf32_supported,
        "nvtx": _nvtx_module(npu),
        "profiler": _profiler_module(),
        "cudart": lambda: _CudaRuntime(npu),
    }
    for short, dtype_name in LEGACY_TENSOR_TYPES.items():
        out[short] = _legacy_type(torch, short, dtype_name)
    out.update(_graph_emulations(npu))
    return out


def _legacy_type(torch: Any, short: str, dtype_name: str) -> type:
    dtype = getattr(torch, dtype_name)
    cpu_ctor = getattr(torch, short)
    qual = f"torch.cuda.{short}"

    def build(*args: Any, **kwargs: Any) -> Any:
        hit(qual)
        dt = dtype_manager.device_dtype(dtype, qual)
        if dt is not dtype:
            cpu_ctor_used = getattr(torch, {v: k for k, v in LEGACY_TENSOR_TYPES.items()}[str(dt).split(".")[1]])
        else:
            cpu_ctor_used = cpu_ctor
        return cpu_ctor_used(*args, **kwargs).to(target())

    class _Meta(type):
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, torch.Tensor) and obj.device.type == target() and obj.dtype == dtype

        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            return build(*args, **kwargs)

    return _Meta(short, (), {"__module__": "torch.cuda", "__qualname__": short, "dtype": dtype,
                             "is_cuda": True, "__ascend_compat_legacy__": qual,
                             "__doc__": f"{qual} on the NPU (ascend-compat)"})


def _nvtx_module(npu: Any) -> types.ModuleType:
    mod = types.ModuleType("torch.cuda.nvtx", "NVTX calls forwarded to torch.npu.mstx (or no-ops)")
    mstx = getattr(npu, "mstx", None)
    depth: list = []

    def range_push(msg: str) -> int:
        if mstx is not None and hasattr(mstx, "range_start"):
            depth.append(mstx.range_start(msg))
        else:
            depth.append(None)
        return len(depth) - 1

    def range_pop() -> int:
        if not depth:
            return -1
        rid = depth.pop()
        if mstx is not None and rid is not None and hasattr(mstx, "range_end"):
            mstx.range_end(rid)
        return len(depth)

    def mark(msg: str) -> None:
        if mstx is not None and hasattr(mstx, "mark"):
            mstx.mark(msg)

    @contextlib.contextmanager
    def range(msg: str, *args: Any, **kwargs: Any):  # noqa: A001 - NVTX's name
        range_push(msg.format(*args, **kwargs) if (args or kwargs) else msg)
        try:
            yield
        finally:
            range_pop()

    def range_start(msg: str) -> int:
        return range_push(msg)

    def range_end(range_id: int) -> None:
        range_pop()

    for fn in (range_push, range_pop, mark, range, range_start, range_end):
        setattr(mod, fn.__name__, fn)
    return mod


class _CudaRuntime:
    """What ``torch.cuda.cudart()`` returns under the shim: Nsight's capture-range markers
    (``cudaProfilerStart``/``cudaProfilerStop``) do nothing and return cudaSuccess (0), as
    ``torch.cuda.profiler.start/stop`` do; any other function is torch.npu.npurt()'s, where that exists."""

    def cudaProfilerStart(self) -> int:  # noqa: N802 (the CUDA runtime's name)
        hit("torch.cuda.cudart().cudaProfilerStart")
        return 0

    def cudaProfilerStop(self) -> int:  # noqa: N802
        hit("torch.cuda.cudart().cudaProfilerStop")
        return 0

    def __init__(self, npu: Any) -> None:
        self._npu = npu

    def __getattr__(self, name: str) -> Any:
        npurt = getattr(self._npu, "npurt", None)
        runtime = None
        if npurt is not None:
            try:
                runtime = npurt()
            except Exception:  # the simulator's, or a build without it: the error below says what to do
                runtime = None
        if runtime is not None and hasattr(runtime, name):
            return getattr(runtime, name)
        raise AttributeError(f"torch.cuda.cudart().{name}: the CUDA runtime API has no NPU counterpart here "
                             "(torch.npu.npurt() has npuHostRegister, npuHostUnregister, npuStreamCreate and "
                             "npuStreamDestroy in torch_npu 2.10 and later)")


def _profiler_module() -> types.ModuleType:
    mod = types.ModuleType("torch.cuda.profiler", "CUDA profiler start/stop: no-ops on the NPU")
    mod.start = lambda: None
    mod.stop = lambda: None
    mod.init = lambda *a, **k: None
    mod.profile = contextlib.nullcontext
    return mod


_GRAPH_WARNED: set = set()


def _warn_once(what: str) -> None:
    if what not in _GRAPH_WARNED:
        _GRAPH_WARNED.add(what)
        warnings.warn(f"ascend-compat: {what}", RuntimeWarning, stacklevel=3)


def _graph_emulations(npu: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if hasattr(npu, "NPUGraph"):
        out["CUDAGraph"] = npu.NPUGraph
        for name in ("graph", "graph_pool_handle", "is_current_stream_capturing", "make_graphed_callables"):
            if hasattr(npu, name):
                out[name] = getattr(npu, name)
    out.setdefault("CUDAGraph", _EagerGraph)
    out.setdefault("graph", _eager_graph_context)
    out.setdefault("graph_pool_handle", lambda: None)
    out.setdefault("is_current_stream_capturing", lambda: False)
    out.setdefault("make_graphed_callables", _eager_make_graphed_callables)
    return out


class _EagerGraph:
    """``torch.cuda.CUDAGraph`` where the backend has no graphs: capture runs eagerly, replay raises."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _warn_once("CUDA graphs are not available on this NPU backend; the captured region runs eagerly once")
        self._captured = False

    def capture_begin(self, *args: Any, **kwargs: Any) -> None:
        self._captured = True

    def capture_end(self) -> None:
        pass

    def replay(self) -> None:
        raise CudaApiUnsupportedError(
            "torch.cuda.CUDAGraph.replay(): this NPU backend has no graph capture, so there is nothing to "
            "replay. Call the captured code directly each step (or use torch.cuda.make_graphed_callables, "
            "which runs eagerly here)."
        )

    def reset(self) -> None:
        self._captured = False

    def pool(self) -> None:
        return None

    def enable_debug_mode(self) -> None:
        pass

    def debug_dump(self, path: str) -> None:
        pass


@contextlib.contextmanager
def _eager_graph_context(cuda_graph: Any = None, *args: Any, **kwargs: Any):
    if cuda_graph is not None and hasattr(cuda_graph, "capture_begin"):
        cuda_graph.capture_begin()
    yield cuda_graph
    if cuda_graph is not None and hasattr(cuda_graph, "capture_end"):
        cuda_graph.capture_end()


def _eager_make_graphed_callables(callables: Any, sample_args: Any, *args: Any, **kwargs: Any) -> Any:
    _warn_once("torch.cuda.make_graphed_callables: no graphs on this NPU backend; callables run eagerly")
    return callables


# --------------------------------------------------------------------------- patches

def _stand_in_with_device(real: type, key: str) -> type:
    def build(*args: Any, **kwargs: Any) -> Any:
        new_args = tuple(translate(a) for a in args)
        new_kwargs = {k: translate(v) for k, v in kwargs.items()}
        hit(key)
        return real(*new_args, **new_kwargs)

    return make_stand_in(real, build, module="torch.cuda")


def resolve(torch: Any, npu: Any, names: list[str]) -> dict[str, tuple[str, Any]]:
    """name -> (action, object to install) for each ``torch.cuda`` name, from its knowledge record."""
    emulated = _emulations(torch, npu, torch.cuda)
    out: dict[str, tuple[str, Any]] = {}
    for name in names:
        rec = table.status(name)
        if rec is None:
            st, npu_name = (table.MAP, name) if hasattr(npu, name) else (table.UNSUPPORTED, None)
            advice = "see `ascend-compat check` for alternatives."
        else:
            st, npu_name, advice = rec.action, rec.npu_name, rec.advice
        if st == table.KEEP:
            continue
        if st == table.EMULATE:
            out[name] = (st, emulated[name])
        elif st == table.UNSUPPORTED:
            obj = getattr(torch.cuda, name, None)
            if isinstance(obj, types.ModuleType):
                out[name] = (st, _UnsupportedModule(name, advice))
            else:
                out[name] = (st, unsupported_function(name, advice))
        else:
            obj = getattr(npu, npu_name, None)
            if obj is None:
                out[name] = (table.UNSUPPORTED, _missing_on_backend(name, npu_name))
            elif name in ("device", "Stream"):
                out[name] = (st, _stand_in_with_device(obj, f"torch.cuda.{name}"))
            elif isinstance(obj, (type, types.ModuleType)) or not callable(obj):
                out[name] = (st, obj)
            else:
                out[name] = (st, all_device_args(f"torch.cuda.{name}")(obj))
    return out


def public_names(torch: Any) -> list[str]:
    """The installed torch's ``torch.cuda.__all__`` (plus ``default_generators`` etc. if absent)."""
    names = list(getattr(torch.cuda, "__all__", []))
    for extra in ("default_generators", "nvtx", "amp", "random", "memory", "graphs", "profiler"):
        if extra not in names:
            names.append(extra)
    return names


def patches() -> list:
    import torch

    npu = getattr(torch, target())
    out = []
    for name, (st, obj) in resolve(torch, npu, public_names(torch)).items():
        out.append(Patch(f"torch.cuda:{name}", obj, f"torch.cuda.{name}: {st}", concept="torch.cuda",
                         rebind=not isinstance(obj, types.ModuleType)))
    # torch.cuda.random / .memory / .graphs re-export the same objects: the registry's
    # stale-binding pass rebinds them there too. Private memory-debugging helpers CUDA scripts use:
    npu_memory = getattr(npu, "memory", None)
    for name in PRIVATE_MEMORY_HELPERS:
        fn = getattr(npu_memory, name, None)
        obj = all_device_args(f"torch.cuda.memory.{name}")(fn) if fn is not None else _missing_on_backend(
            f"memory.{name}", f"memory.{name}")
        out.append(Patch(f"torch.cuda.memory:{name}", obj, "memory history / snapshots", optional=True,
                         concept="torch.cuda"))
    for rec in table.PRIVATE:  # private torch._C CUDA bindings scripts call (knowledge.cuda_names.PRIVATE)
        out.append(Patch(f"torch._C:{rec.name}", _PRIVATE_EMULATIONS[rec.name], f"torch._C.{rec.name}: {rec.action}",
                         concept="torch.cuda", rebind=False))
    out.append(Patch("torch.autograd.profiler_util:Kernel.__new__", _kernel_new, "profiler Kernel('cuda')",
                     wrap=True, rebind=False, optional=True, concept="torch.cuda"))
    return out


PRIVATE_MEMORY_HELPERS = ("_record_memory_history", "_snapshot", "_dump_snapshot")


def _clear_cublas_workspaces() -> None:
    hit("torch._C._cuda_clearCublasWorkspaces")


_PRIVATE_EMULATIONS = {"_cuda_clearCublasWorkspaces": _clear_cublas_workspaces}


def _kernel_new(original):
    def __new__(cls, name: Any, device: Any, duration: Any) -> Any:
        return original(cls, name, translate(device), duration)

    return make_wrapper(original, __new__)
