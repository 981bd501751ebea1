"""``torch_npu.distributed.tensor`` of the stand-in: the DTensor rules torch_npu adds for its own ops.

:func:`register` installs them in DTensor's op dispatcher (idempotent). torch_npu does this when it is
imported; the simulator does it as soon as ``torch.distributed.tensor`` is imported (or at install when
it already is), which a program cannot tell apart and which keeps ``install()`` from importing DTensor.
"""
from __future__ import annotations

import torch

__all__ = ["register"]

_done = False


def register() -> None:
    """Add the ``npu_fusion_attention`` / ``_grad`` handlers (``_attention``) to DTensor's dispatcher."""
    global _done
    if _done:
        return
    from torch.distributed.tensor import DTensor

    from ascend_compat.simulator.torch_npu import _op_registry
    from ascend_compat.simulator.torch_npu.distributed.tensor import _attention

    handlers = DTensor._op_dispatcher._custom_op_handlers  # mutated in place: C++ holds this dict
    for overload in _attention.HANDLED:
        name, _, variant = overload.partition(".")
        if name in _op_registry.op_names():  # the emulated version has the op
            handlers[getattr(getattr(torch.ops.npu, name), variant)] = _attention.handler
    _done = True
