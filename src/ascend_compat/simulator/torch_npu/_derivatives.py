"""Explicit backward formulas of ``npu::`` ops, as torch_npu's ``derivatives.yaml`` (op-plugin) gives them.

Most simulated ``npu::`` ops get autograd by running their CPU reference under
``AutogradPrivateUse1``, so autograd records the reference's own torch ops. The ops here instead
record one node whose backward calls torch_npu's grad op, as torch_npu does. It matters where the
inputs are not plain tensors: with DTensor q/k/v, ``npu_fusion_attention`` and its grad each reach
DTensor as one op (whose sharding torch_npu defines), not as dozens of decomposed ones.

* ``npu_fusion_attention``: outputs ``(attention_out, softmax_max, softmax_sum, softmax_out)`` are
  differentiable, the ints are not; ``query, key, value, pse`` (and ``sink``) get their gradients from
  ``npu_fusion_attention_grad(query, key, value, grad, head_num, input_layout, pse=..., atten_mask=...,
  softmax_max=result1, softmax_sum=result2, softmax_in=result3, attention_in=result0, scale_value=scale,
  ..., seed=result4, offset=result5, numels=result6, ...)``.

:data:`FORMULAS` maps an overload to ``(setup_context, backward)`` for ``torch.library.register_autograd``.
:data:`NOT_DIFFERENTIABLE` lists grad ops: torch_npu gives them no derivative, so they have no autograd
kernel and reach the next key (DTensor's, or the reference) through torch's autograd fallback.
"""
from __future__ import annotations

from typing import Callable, Dict, Tuple

import torch

__all__ = ["FORMULAS", "NOT_DIFFERENTIABLE"]

NOT_DIFFERENTIABLE = frozenset({"npu_fusion_attention_grad"})

# npu_fusion_attention's arguments, by position in torch_npu 2.14's schema
_FA_ARGS = ("query", "key", "value", "head_num", "input_layout", "pse", "padding_mask", "atten_mask", "scale",
            "keep_prob", "pre_tockens", "next_tockens", "inner_precise", "prefix", "actual_seq_qlen",
            "actual_seq_kvlen", "sparse_mode", "gen_mask_parallel", "sync", "softmax_layout", "sink",
            "dropout_mask", "seed", "offset")
_FA_SAVED = ("query", "key", "value", "pse", "padding_mask", "atten_mask", "sink")
_FA_PASSED = ("head_num", "input_layout", "scale", "keep_prob", "pre_tockens", "next_tockens", "inner_precise",
              "prefix", "actual_seq_qlen", "actual_seq_kvlen", "sparse_mode", "gen_mask_parallel", "sync",
              "softmax_layout")


def _fa_setup(ctx, inputs, output) -> None:
    args = dict(zip(_FA_ARGS, inputs))
    ctx.args = {name: args[name] for name in _FA_PASSED}
    ctx.seed, ctx.offset, ctx.numels = output[4], output[5], output[6]
    ctx.save_for_backward(*(args[name] for name in _FA_SAVED), *output[:4])


def _fa_backward(ctx, grad, *unused_grads):
    q, k, v, pse, padding_mask, atten_mask, sink, out, smax, ssum, sout = ctx.saved_tensors
    a = ctx.args
    dq, dk, dv, dpse, dsink = torch.ops.npu.npu_fusion_attention_grad(
        q, k, v, grad, a["head_num"], a["input_layout"], pse=pse, padding_mask=padding_mask,
        atten_mask=atten_mask, softmax_max=smax, softmax_sum=ssum, softmax_in=sout, attention_in=out,
        scale_value=a["scale"], keep_prob=a["keep_prob"], pre_tockens=a["pre_tockens"],
        next_tockens=a["next_tockens"], inner_precise=a["inner_precise"], seed=ctx.seed, offset=ctx.offset,
        numels=ctx.numels, prefix=a["prefix"], actual_seq_qlen=a["actual_seq_qlen"],
        actual_seq_kvlen=a["actual_seq_kvlen"], sparse_mode=a["sparse_mode"],
        gen_mask_parallel=a["gen_mask_parallel"], sync=a["sync"], softmax_layout=a["softmax_layout"], sink=sink)
    grads = {"query": dq, "key": dk, "value": dv, "pse": dpse, "sink": dsink if sink is not None else None}
    return tuple(grads.get(name) for name in _FA_ARGS)


FORMULAS: Dict[str, Tuple[Callable, Callable]] = {
    "npu_fusion_attention": (_fa_setup, _fa_backward),
}
