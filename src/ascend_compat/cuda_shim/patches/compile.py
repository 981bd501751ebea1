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
"""
from __future__ import annotations

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


def patches() -> list:
    return [
        Patch("torch._dynamo.device_interface:CudaInterface.is_available", _cuda_interface_is_available,
              "dynamo/inductor see the real CUDA availability (no triton CUDA driver on an NPU machine)",
              wrap=True, rebind=False, optional=True, defer=True, concept="compile"),
        Patch("torch._inductor.compile_fx:compile_fx", _compile_fx,
              "inductor has no NPU codegen here: compile npu graphs with aot_eager, say so once",
              wrap=True, optional=True, defer=True, concept="compile"),
    ]
