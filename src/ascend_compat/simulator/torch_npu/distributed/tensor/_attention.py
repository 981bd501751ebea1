"""DTensor rules for ``npu_fusion_attention`` and its grad, as torch_npu 2.14 ships them
(``torch_npu/distributed/tensor/_attention.py``: sharding strategies plus a custom DTensor op handler
for both ops; torch_npu imports it with ``torch_npu.distributed``, i.e. at ``import torch_npu``).

Per mesh dimension one of three strategies applies:

* **replicate**: everything replicated; the only one when ``pse``, ``padding_mask``, ``prefix``,
  ``actual_seq_qlen/kvlen`` or ``sink`` is given or ``keep_prob < 1`` (dropout would differ when sharded);
* **data parallel** (layouts with B): q/k/v (and ``dy``, ``attention_in``) sharded on B,
  ``softmax_max/sum`` on dim 0, a BNSS/B1SS ``atten_mask`` on dim 0, other masks replicated;
* **head parallel** (layouts with N): q/k/v sharded on N, ``softmax_max/sum`` on dim 1, a BNSS mask
  on dim 1, other masks replicated; the local call gets ``head_num`` = the local head count.

Plain tensors among the arguments (the compressed causal mask SDPA builds) count as replicated.
The strategy of a mesh dimension follows the placements q/k/v already have there (head sharding
first, then batch sharding, else replicate); arguments are redistributed to it before the local
call. ``softmax_out`` (and ``dpse``/``dsink``) are replicated.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import torch
from torch.distributed.tensor import DTensor, Replicate, Shard
from torch.distributed.tensor._dtensor_spec import DTensorSpec, TensorMeta
from torch.distributed.tensor._redistribute import redistribute_local_tensor
from torch.distributed.tensor._utils import compute_global_tensor_info

__all__ = ["HANDLED", "handler"]

_EXTRA = ("pse", "padding_mask", "prefix", "actual_seq_qlen", "actual_seq_kvlen", "sink", "dropout_mask")
#: arguments laid out like q/k/v (sharded on the B or N axis of the layout)
_QKV_LIKE = ("query", "key", "value", "dy", "attention_in")


def _bind(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Dict[str, Any]:
    names = [a.name for a in op._schema.arguments]
    bound = dict(zip(names, args))
    bound.update(kwargs)
    return bound


def _strategy(bound: Dict[str, Any], layout: str, mesh_dim: int) -> str:
    if any(bound.get(name) is not None for name in _EXTRA) or bound.get("keep_prob", 1.0) < 1.0:
        return "replicate"
    placements = [t.placements[mesh_dim] for t in (bound["query"], bound["key"], bound["value"])
                  if isinstance(t, DTensor)]
    if "N" in layout and Shard(layout.index("N")) in placements:
        return "heads"
    if "B" in layout and Shard(layout.index("B")) in placements:
        return "batch"
    return "replicate"


def _target(name: str, t: DTensor, strategy: str, layout: str):
    if strategy == "replicate" or name in ("softmax_in", "softmax_out"):
        return Replicate()
    axis = layout.index("N" if strategy == "heads" else "B")
    if name in _QKV_LIKE:
        return Shard(axis)
    if name in ("softmax_max", "softmax_sum"):
        return Shard(1 if strategy == "heads" else 0)
    if name == "atten_mask":
        mask_axis = 1 if strategy == "heads" else 0
        return Shard(mask_axis) if t.ndim == 4 and t.shape[mask_axis] != 1 else Replicate()
    return Replicate()


def _wrap(local: torch.Tensor, mesh, placements) -> DTensor:
    shape, stride = compute_global_tensor_info(local, mesh, placements)
    spec = DTensorSpec(mesh, tuple(placements), tensor_meta=TensorMeta(torch.Size(shape), tuple(stride), local.dtype))
    return DTensor(local, spec, requires_grad=local.requires_grad)


def handler(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> object:
    """DTensor's custom handler for the two ops: redistribute, call the op locally, wrap the outputs."""
    bound = _bind(op, args, kwargs)
    mesh = next(v.device_mesh for v in bound.values() if isinstance(v, DTensor))
    if mesh.get_coordinate() is None:
        raise NotImplementedError(f"{op}: ranks outside the device mesh are not simulated")
    replicated = [Replicate()] * mesh.ndim
    for name, value in bound.items():  # plain tensors count as replicated, as torch_npu treats them
        if isinstance(value, torch.Tensor) and not isinstance(value, DTensor):
            bound[name] = _wrap(value, mesh, replicated)
    layout = str(bound["input_layout"]).upper()
    strategies = [_strategy(bound, layout, d) for d in range(mesh.ndim)]
    local: Dict[str, Any] = {}
    for name, value in bound.items():
        if not isinstance(value, DTensor):
            local[name] = value
            continue
        want = tuple(_target(name, value, s, layout) for s in strategies)
        src = value._spec
        dst = DTensorSpec(mesh, want, tensor_meta=src.tensor_meta)
        local[name] = value._local_tensor if src.placements == want else redistribute_local_tensor(
            value._local_tensor, src, dst)
    if "heads" in strategies:
        local["head_num"] = local["query"].size(layout.index("N"))
    positional = [a.name for a in op._schema.arguments if not a.kwarg_only]
    call_args = [local.pop(name) for name in positional if name in local]
    outputs = op(*call_args, **local)
    return _wrap_outputs(op, outputs, bound, strategies, layout, mesh)


def _wrap_outputs(op, outputs, bound, strategies, layout, mesh) -> tuple:
    q = bound["query"]
    names: List[Optional[str]]
    if op.name() == "npu::npu_fusion_attention":
        names = ["query", "softmax_max", "softmax_sum", "softmax_out", None, None, None]
    else:  # npu_fusion_attention_grad: dq, dk, dv, dpse, dsink
        names = ["query", "key", "value", "pse", "sink"]
    wrapped = []
    for name, out in zip(names, outputs):
        if name is None or not isinstance(out, torch.Tensor):
            wrapped.append(out)
            continue
        ref = bound.get(name) if isinstance(bound.get(name), DTensor) else q
        placements = [_target(name if name in _QKV_LIKE or name.startswith("softmax") else "other", ref, s, layout)
                      for s in strategies]
        wrapped.append(_wrap(out, mesh, placements))
    return tuple(wrapped)


#: op overload names this module handles
HANDLED = ("npu_fusion_attention.default", "npu_fusion_attention_grad.default")
