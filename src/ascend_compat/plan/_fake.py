"""Storage-less tensors for a plan: PyTorch's ``FakeTensorMode`` over the simulated NPU.

Decision (issue 26): the script's tensors are FakeTensors (shapes, dtypes, strides and storage sizes,
no data), CPU ones included, so ``Model(cfg).cuda()`` of a 7B model takes no host memory. FakeTensor
works with the real dispatcher (the simulator's autocast kernels and SDPA routing run as they do with
real storage), autograd, the optimizers' foreach kernels, FSDP2/DTensor and a fake process group; a
storage-less PrivateUse1 device would have needed a second execution path through every simulator
kernel. What it needs here:

* ``Module.to()`` swaps FakeTensor parameters (``torch.utils.swap_tensors``), which refuses tensors
  with weak references; the converter's memo and the dispatch cache's finalizers hold some. :func:`enter`
  drops those memo entries and runs those finalizers (they evict the cache entries keyed by the tensor) first.
* FakeTensor kernels (``register_fake``) for torch_npu ops that have none: ``npu_fusion_attention`` and
  its grad, with the output shapes of the simulator's references (float32 ``[B, N, Sq, 8]`` statistics).
* ``.item()`` of a FakeTensor answers the value a healthy run would see (:mod:`._values`), and so does
  ``f"{t:.4f}"`` of a 0-dim one.
* the optimizers pick their foreach kernels for FakeTensor parameters as for real ones (their check
  is ``type(p) in _foreach_supported_types``), so a plan allocates what the real step allocates.
"""
from __future__ import annotations

import contextlib
import weakref

import torch

_registered = False


def register_fake_kernels() -> None:
    """FakeTensor kernels for the torch_npu ops a training step reaches without one (idempotent)."""
    global _registered
    if _registered:
        return
    _registered = True
    lib = torch.library

    @lib.register_fake("npu::npu_fusion_attention")
    def _fa(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None, scale=1.0,
            keep_prob=1.0, pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0, prefix=None,
            actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
            softmax_layout="", sink=None):
        layout = str(input_layout).upper()
        b, n, sq = _bns(query, layout, head_num)
        out_shape = list(query.shape)
        if layout in ("BSH", "SBH"):
            out_shape[-1] = value.shape[-1] * head_num // max(1, key.shape[-1] // (query.shape[-1] // head_num))
        else:
            out_shape[-1] = value.shape[-1]
        out = query.new_empty(out_shape)
        stats = (sq, n, 8) if layout == "TND" else (b, n, sq, 8)
        smax = query.new_empty(stats, dtype=torch.float32)
        ssum = query.new_empty(stats, dtype=torch.float32)
        return out, smax, ssum, query.new_empty(0), 0, 0, 0

    @lib.register_fake("npu::npu_fusion_attention_grad")
    def _fa_grad(query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None,
                 softmax_max=None, softmax_sum=None, softmax_in=None, attention_in=None, scale_value=1.0,
                 keep_prob=1.0, pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0, seed=0, offset=0,
                 numels=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                 gen_mask_parallel=True, sync=False, softmax_layout="", sink=None):
        # contiguous, as the reference's gradients are (not the strides of a transposed query)
        dpse = pse.new_empty(pse.shape) if pse is not None else None
        dsink = sink.new_empty(sink.shape) if sink is not None else query.new_empty(0)
        return query.new_empty(query.shape), key.new_empty(key.shape), value.new_empty(value.shape), dpse, dsink


def _bns(query, layout: str, head_num: int):
    if layout == "BNSD":
        return query.shape[0], query.shape[1], query.shape[2]
    if layout == "BSND":
        return query.shape[0], query.shape[2], query.shape[1]
    if layout == "BSH":
        return query.shape[0], head_num, query.shape[1]
    if layout == "SBH":
        return query.shape[1], head_num, query.shape[0]
    return 1, head_num, query.shape[0]  # TND


@contextlib.contextmanager
def enter():
    """Activate a ``FakeTensorMode`` (real tensors met on the way become fake) with the fixes above."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    register_fake_kernels()
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    converter = mode.fake_tensor_converter.meta_converter
    memo = converter.tensor_memo
    swap = torch.utils.swap_tensors

    def swap_tensors(t1, t2):
        for t in (t1, t2):
            for k in [k for k, v in list(memo.items()) if v is t]:
                del memo[k]
            lookup = getattr(converter.describer, "lookup_tensor", None)
            if lookup is not None and t in lookup:
                del lookup[t]
            # the dispatch cache's finalizers on ``t`` evict the cache entries keyed by its id: run them now
            # (the swapped object keeps its id but not its metadata)
            for fin, info in list(weakref.finalize._registry.items()):
                if info.weakref() is t:
                    fin()
        return swap(t1, t2)

    torch.utils.swap_tensors = swap_tensors
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.optim import optimizer

    # f"{loss:.4f}" of a 0-dim tensor formats its value; Tensor.__format__ does so for exact Tensors only
    fake_format = FakeTensor.__dict__.get("__format__")
    FakeTensor.__format__ = lambda self, spec: (self.item().__format__(spec) if self.dim() == 0
                                                else torch.Tensor.__format__(self, spec))
    supported = optimizer._foreach_supported_types
    added = FakeTensor not in supported
    if added:
        supported.append(FakeTensor)
    try:
        with mode:
            yield mode
    finally:
        torch.utils.swap_tensors = swap
        if added:
            supported.remove(FakeTensor)
        if fake_format is None:
            del FakeTensor.__format__
        else:
            FakeTensor.__format__ = fake_format
