"""CPU reference of torch_npu's paged KV-cache update (torch_npu 2.14 schema; the op doc in
``_op_plugin_docs.py``).

``npu_scatter_pa_kv_cache(key, value, key_cache, value_cache, slot_mapping, *, compress_lens,
compress_seq_offsets, seq_lens, cache_mode='PA_NZ') -> ()`` writes token t's key/value (``[T, N, D]``)
into the caches in place at slot ``s = slot_mapping[t]`` (block ``s // block_size``, row
``s % block_size``):

* ``cache_mode`` 'Norm' (or None): ND caches ``[num_blocks, block_size, N, D]``;
* 'PA_NZ' (the default): NZ caches ``[num_blocks, N*D // c0, block_size, c0]``: the token's ``N*D``
  values split into ``c0``-wide fractals, ``cache[block, :, row, :]``.

Negative slots are skipped (padding tokens), as vLLM's cache writers do. The compressed mode
(``compress_lens``/``compress_seq_offsets``/``seq_lens``) is not implemented.
"""
from __future__ import annotations

from typing import Optional

import torch

from ascend_compat.simulator.torch_npu.fused._errors import check, not_supported


def _write(op: str, src: torch.Tensor, cache: torch.Tensor, slots: torch.Tensor, nz: bool) -> None:
    check(cache.dim() == 4, f"{op}: caches must be 4D, got {cache.dim()}D.")
    check(src.dtype == cache.dtype, f"{op}: key/value and the caches must have the same dtype.", "TYPE")
    rows = src.reshape(src.shape[0], -1)
    keep = slots >= 0
    rows, slots = rows[keep], slots[keep]
    if nz:
        blocks, frac, block_size, c0 = cache.shape
        check(frac * c0 == rows.shape[1], f"{op}: an NZ cache row holds {frac * c0} values, a token has {rows.shape[1]}.")
        cache[slots // block_size, :, slots % block_size, :] = rows.reshape(-1, frac, c0)
    else:
        blocks, block_size = cache.shape[:2]
        flat = cache.view(blocks * block_size, -1)
        check(flat.shape[1] == rows.shape[1], f"{op}: a cache row holds {flat.shape[1]} values, a token has {rows.shape[1]}.")
        flat[slots] = rows


def npu_scatter_pa_kv_cache(key: torch.Tensor, value: torch.Tensor, key_cache: torch.Tensor,
                            value_cache: torch.Tensor, slot_mapping: torch.Tensor, *, compress_lens=None,
                            compress_seq_offsets=None, seq_lens=None, cache_mode: Optional[str] = "PA_NZ"):
    op = "npu_scatter_pa_kv_cache"
    if compress_lens is not None or compress_seq_offsets is not None or seq_lens is not None:
        raise not_supported(op, "the compressed mode (compress_lens/compress_seq_offsets/seq_lens)")
    check(cache_mode in (None, "Norm", "PA_NZ"), f"{op}: cache_mode must be 'Norm' or 'PA_NZ', got {cache_mode!r}.")
    check(key.shape[0] == value.shape[0] == slot_mapping.numel(), f"{op}: key, value and slot_mapping must have "
                                                                   "one entry per token.")
    slots = slot_mapping.reshape(-1).long()
    nz = cache_mode == "PA_NZ"
    _write(op, key, key_cache, slots, nz)
    _write(op, value, value_cache, slots, nz)
