"""``torch.nn.parallel.comm`` for ``DataParallel`` on the NPU.

torch implements scatter/gather/broadcast for DataParallel with C++ functions that exist only in
CUDA builds (``torch._C._scatter`` ...). For tensors on the NPU these replacements do the same
with ordinary copies; any other tensor goes to torch's own function unchanged.
"""
from __future__ import annotations

from typing import Any, Sequence

from ascend_compat.cuda_shim.devices import target
from ascend_compat.cuda_shim.registry import Patch, hit, make_wrapper


def _device(d: Any) -> Any:
    import torch

    if isinstance(d, torch.device):
        return d if d.type != "cuda" else torch.device(target(), d.index)
    if isinstance(d, str):
        return torch.device(d)
    return torch.device(target(), int(d))


def _on_npu(t: Any) -> bool:
    return getattr(getattr(t, "device", None), "type", None) == target()


def _scatter(original):
    def scatter(tensor, devices=None, chunk_sizes=None, dim=0, streams=None, *, out=None):
        if not _on_npu(tensor) and not (devices and any(_device(d).type == target() for d in devices)):
            return original(tensor, devices, chunk_sizes, dim, streams, out=out)
        hit("DataParallel scatter on npu")
        if out is not None:
            chunks = tensor.split([o.size(dim) for o in out], dim)
            for o, c in zip(out, chunks):
                o.copy_(c)
            return tuple(out)
        devices = [_device(d) for d in devices]
        chunks = tensor.split(list(chunk_sizes), dim) if chunk_sizes else tensor.chunk(len(devices), dim)
        return tuple(c.to(d).contiguous() for c, d in zip(chunks, devices))

    return make_wrapper(original, scatter)


def _gather(original):
    def gather(tensors, dim=0, destination=None, *, out=None):
        if not any(_on_npu(t) for t in tensors):
            return original(tensors, dim, destination, out=out)
        import torch

        hit("DataParallel gather on npu")
        if out is not None:
            return torch.cat([t.to(out.device) for t in tensors], dim, out=out)
        if destination == -1:
            dest = torch.device("cpu")
        elif destination is None:
            dest = torch.device(target(), getattr(torch, target()).current_device())
        else:
            dest = _device(destination)
        return torch.cat([t.to(dest) for t in tensors], dim)

    return make_wrapper(original, gather)


def _broadcast_coalesced(original):
    def broadcast_coalesced(tensors: Sequence[Any], devices: Sequence[Any], buffer_size: int = 10485760):
        if not any(_on_npu(t) for t in tensors):
            return original(tensors, devices, buffer_size)
        hit("DataParallel broadcast on npu")
        devices = [_device(d) for d in devices]
        return [[t if t.device == d else t.to(d) for t in tensors] for d in devices]

    return make_wrapper(original, broadcast_coalesced)


def _broadcast(original):
    def broadcast(tensor, devices=None, *, out=None):
        if not _on_npu(tensor):
            return original(tensor, devices, out=out)
        if out is not None:
            for o in out:
                o.copy_(tensor)
            return tuple(out)
        return tuple(tensor if tensor.device == _device(d) else tensor.to(_device(d)) for d in devices)

    return make_wrapper(original, broadcast)


def _reduce_add(original):
    def reduce_add(inputs, destination=None):
        if not any(_on_npu(t) for t in inputs):
            return original(inputs, destination)
        import torch

        dest = inputs[0].device if destination is None else _device(destination)
        result = torch.zeros_like(inputs[0], device=dest)
        for t in inputs:
            result.add_(t.to(dest))
        return result

    return make_wrapper(original, reduce_add)


def _reduce_add_coalesced(original):
    def reduce_add_coalesced(inputs, destination=None, buffer_size=10485760):
        if not any(_on_npu(t) for group in inputs for t in group):
            return original(inputs, destination, buffer_size)
        import torch.nn.parallel.comm as comm

        return [comm.reduce_add(list(ts), destination) for ts in zip(*inputs)]

    return make_wrapper(original, reduce_add_coalesced)


def patches() -> list:
    comm = "torch.nn.parallel.comm"
    return [
        Patch(f"{comm}:scatter", _scatter, "DataParallel scatter (CUDA-only C++ in torch)", wrap=True,
              concept="DataParallel"),
        Patch(f"{comm}:gather", _gather, "DataParallel gather", wrap=True, concept="DataParallel"),
        Patch(f"{comm}:broadcast_coalesced", _broadcast_coalesced, "DataParallel replicate", wrap=True,
              concept="DataParallel"),
        Patch(f"{comm}:broadcast", _broadcast, "comm.broadcast", wrap=True, concept="DataParallel"),
        Patch(f"{comm}:reduce_add", _reduce_add, "DataParallel gradient reduction", wrap=True,
              concept="DataParallel"),
        Patch(f"{comm}:reduce_add_coalesced", _reduce_add_coalesced, "DataParallel gradient reduction",
              wrap=True, concept="DataParallel"),
    ]
