"""``torch.compile`` on npu tensors: inductor only where the backend registered inductor codegen.

``backend="eager"`` and ``"aot_eager"`` run on npu tensors as they are. The default backend,
inductor, generates code per device type; with no inductor codegen registered for the NPU (the
simulator; torch_npu builds without its inductor support) it would fail deep inside code generation
(``KeyError: 'npu'``). The patched ``compile_fx`` compiles such graphs with ``aot_eager`` instead
(same autograd graph, no generated kernels) and says so once with a warning naming the alternatives
(torch_npu's torchair backend for graph mode). Graphs on other devices and NPUs with inductor codegen
go to inductor unchanged.

dynamo/inductor's CUDA device interface (``CudaInterface.is_available``) sees the real CUDA answer,
like the library detection points: otherwise ``has_triton()`` believes in a CUDA GPU, and with the
``triton`` package installed inductor starts triton's CUDA driver even for CPU graphs ("libcuda.so
cannot found"). Unlike transfer_to_npu we do not force ``has_triton()`` to False process-wide (a
triton backend for the NPU stays usable), nor make ``get_gpu_type()`` answer "npu".

Compiled code never sees the shim's Python (:class:`DynamoRules`, applied when ``torch._dynamo`` is
imported): the factory wrappers (``torch.arange``, ``torch.tensor``, ``torch.full``...
with their ``device=`` translation) are registered with ``torch.compiler.allow_in_graph``, so dynamo
records them as graph calls (their translation runs on fake tensors and when AOT autograd traces the
graph, whose aten ops then carry the npu device) instead of tracing their bodies as user code; the
rest of the shim's files are skipped by dynamo like torch's own (a call into them from compiled code
is a graph break, and dynamo never compiles their frames). transfer_to_npu instead puts
``torch._dynamo.disable`` on its helpers: a graph break at every translated call.
"""
from __future__ import annotations

import os
import warnings
from typing import Any

from ascend_compat.cuda_shim.devices import target
from ascend_compat.cuda_shim.registry import Patch, hit, make_wrapper

_WARNED: list = []


def inductor_supports(device_type: str) -> bool:
    """True when inductor has code generation registered for ``device_type``."""
    from torch._inductor.codegen.common import get_scheduling_for_device, init_backend_registration

    init_backend_registration()
    return get_scheduling_for_device(device_type) is not None


def _on_device(example_inputs: Any, device_type: str) -> bool:
    for x in example_inputs or ():
        device = getattr(x, "device", None)
        if getattr(device, "type", None) == device_type:
            return True
    return False


def _compile_fx(original: Any) -> Any:
    def compile_fx(model_: Any, example_inputs_: Any, *args: Any, **kwargs: Any) -> Any:
        tgt = target()
        if not _on_device(example_inputs_, tgt) or inductor_supports(tgt):
            return original(model_, example_inputs_, *args, **kwargs)
        hit("torch.compile(inductor)->aot_eager")
        if not _WARNED:
            _WARNED.append(True)
            patches_ = kwargs.get("config_patches")
            extra = f" (inductor options {patches_!r} do not apply)" if patches_ else ""
            warnings.warn(
                f"ascend-compat: torch.compile's default backend (inductor) has no code generation for "
                f"'{tgt}' here, so graphs on {tgt} tensors are compiled with backend='aot_eager' (no fused "
                f"kernels){extra}. Pass backend='aot_eager' to silence this, or use torch_npu's torchair "
                f"backend (torchair.get_npu_backend()) for NPU graph mode.", RuntimeWarning, stacklevel=2)
        from torch._dynamo.backends.debugging import aot_eager

        return aot_eager(model_, example_inputs_)

    return make_wrapper(original, compile_fx)


def _cuda_interface_is_available(original: Any) -> Any:
    def is_available() -> bool:
        """The real CUDA answer (ascend-compat): inductor must not target a CUDA GPU that is not there."""
        from ascend_compat.cuda_shim.patches.cuda_namespace import real_cuda

        with real_cuda():
            return original()

    return make_wrapper(original, is_available)


class DynamoRules(Patch):
    """Dynamo's rules for the shim (see the module docstring): a deferred change on ``torch._dynamo``
    (applied once it is fully imported) that marks the module (``_ascend_compat_shim``) and, while applied,
    keeps the factory wrappers in graph and the shim's files skipped."""

    def __init__(self) -> None:
        super().__init__("torch._dynamo:_ascend_compat_shim", True,
                         "compiled code records the shim's factory wrappers as graph calls and never traces "
                         "the shim's Python", defer=True, concept="compile")
        self._allowed: list = []
        self._skip_dir = ""

    def apply(self) -> bool:
        if not super().apply():
            return False
        import torch
        from torch._dynamo import trace_rules

        from ascend_compat.cuda_shim import registry

        for change in registry.applied():
            fn = getattr(change, "replacement_object", None)
            if getattr(change, "concept", "") == "factories" and getattr(fn, "__ascend_compat__", False) \
                    and change.target not in _NOT_IN_GRAPH:
                torch.compiler.allow_in_graph(fn)
                self._allowed.append(fn)
        self._skip_dir = _SHIM_DIR
        if self._skip_dir not in trace_rules.SKIP_DIRS:
            trace_rules.SKIP_DIRS.append(self._skip_dir)
            trace_rules._recompile_re()
        return True

    def revert(self) -> None:
        from torch._dynamo import trace_rules

        for fn in self._allowed:
            trace_rules._allowed_callable_ids.remove(id(fn))
        self._allowed.clear()
        if self._skip_dir in trace_rules.SKIP_DIRS:
            trace_rules.SKIP_DIRS.remove(self._skip_dir)
            trace_rules._recompile_re()
        super().revert()
        # dynamo's name -> object rule maps are cached on first use: built while the shim's wrappers stood in
        # for torch.arange & co., they no longer know torch's own functions once those are back
        trace_rules.clear_lru_cache()


#: factory wrappers that configure rather than create tensors: left to dynamo's skip rule
_NOT_IN_GRAPH = frozenset({"torch:set_default_device", "torch:get_device_module"})
_SHIM_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def patches() -> list:
    return [
        DynamoRules(),
        Patch("torch._dynamo.device_interface:CudaInterface.is_available", _cuda_interface_is_available,
              "dynamo/inductor see the real CUDA availability (no triton CUDA driver on an NPU machine)",
              wrap=True, rebind=False, optional=True, defer=True, concept="compile"),
        Patch("torch._inductor.compile_fx:compile_fx", _compile_fx,
              "inductor has no NPU codegen here: compile npu graphs with aot_eager, say so once",
              wrap=True, optional=True, defer=True, concept="compile"),
    ]
