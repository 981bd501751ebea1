"""CPU reference of ``torch_npu.npu_fusion_attention`` (and its ``_grad``), torch_npu 2.14 schema.

Contract (verified against the torch_npu 2.14.0 wheel: ``npu_native_functions_by_codegen.yaml``,
``_op_plugin_docs.py``, ``op_plugin/meta/_meta_registrations.py``; op-plugin
``FlashAttentionKernelNpuOpApi.cpp``; CANN ``aclnnFlashAttentionScore`` docs):

* ``out = Dropout(Softmax(Mask(scale * (Q·Kᵀ + pse), atten_mask)), keep_prob) · V``: ``scale``
  multiplies and defaults to 1.0; ``pse`` is added *before* scaling; ``keep_prob = 1 - p``.
* ``atten_mask`` (bool/uint8): True/1 means masked OUT.
* Layouts BSH, SBH, BSND, BNSD, TND (case-insensitive); TND needs host int lists
  ``actual_seq_qlen/kvlen`` holding cumulative ends without a leading 0 (a zero-length batch
  repeats the previous value, trailing zeros skip batches).
* sparse_mode 0 (mask + top-left pre/next band), 1 (full mask), 2 (top-left causal), 3
  (bottom-right causal), 4 (band counted from bottom-right), 5 (prefix, uncompressed BNSS/B1SS
  mask), 6 (prefix, compressed 3072x2048 mask), 7/8 (TND only, sequence-parallel split of 3/2).
  Modes 2/3/4/7/8 need the compressed ``triu(ones(2048, 2048), 1)`` mask and mode 6 the
  3072x2048 prefix mask; any other mask raises (the hardware silently computes garbage with it).
  Without ``atten_mask`` every mode computes full attention, as torch_npu documents.
* GQA/MQA when ``Nq % Nkv == 0``; ``Dq == Dk >= Dv``.
* Returns ``(attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels)``;
  ``softmax_max``/``softmax_sum`` are float32 ``[B, N, Sq, 8]`` (TND: ``[T, N, 8]``, holding N-major
  data unless ``softmax_layout="TND"``), ``softmax_out`` is an empty tensor.

Decisions where torch_npu leaves behaviour unspecified: fully masked rows give zero output,
``softmax_max = -inf`` and ``softmax_sum = 0`` (what the kernels' invalid-row handling,
``inner_precise=2``, produces for the output); dropout masks come from the tensor device's default
generator's Philox ``(seed, offset)`` (advanced by 12, as ``philox_engine_inputs(10)``) and are
reproducible from the returned pair; TND tokens past
the last cumulative length get zero output. Computation is in float32 for float16/bfloat16
inputs (the kernels accumulate in float32) and the result is cast back.
"""
from __future__ import annotations

import contextlib
import warnings

import torch

from ascend_compat.simulator import _dispatch
from ascend_compat.simulator.torch_npu.fused._errors import (
    check,
    check_float_dtype,
    int_list,
    not_supported,
)

_OP = "npu_fusion_attention"
_LAYOUTS = ("BSH", "SBH", "BSND", "BNSD", "TND")
COMPRESSED_MASK_SIZE = 2048
_PREFIX_MASK_ROWS = 3072
_MAX_TOKENS = 2147483647


# ----------------------------------------------------------------------------- layouts
def _to_bnsd(t: torch.Tensor, layout: str, heads: int | None, head_dim: int | None) -> torch.Tensor:
    """View a BSH/SBH/BSND/BNSD tensor as [B, N, S, D]; BSH/SBH need ``heads`` or ``head_dim``."""
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(1, 2)
    if layout == "SBH":
        t = t.transpose(0, 1)
    b, s, h = t.shape
    if heads is None:
        heads = h // head_dim
    return t.reshape(b, s, heads, h // heads).transpose(1, 2)


def _from_bnsd(t: torch.Tensor, layout: str) -> torch.Tensor:
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(1, 2)
    b, n, s, d = t.shape
    out = t.transpose(1, 2).reshape(b, s, n * d)
    return out.transpose(0, 1) if layout == "SBH" else out


# ----------------------------------------------------------------------------- masks
def band_masked(sq: int, skv: int, pre: int, nxt: int, origin: int, device) -> torch.Tensor:
    """Bool [sq, skv], True where column j lies outside the band around row i.

    With ``d = j - i - origin`` a position is kept when ``-pre <= d <= nxt``; ``origin`` is 0 for
    bands counted from the top-left corner and ``skv - sq`` for bands from the bottom-right.
    """
    i = torch.arange(sq, device=device).unsqueeze(1)
    j = torch.arange(skv, device=device).unsqueeze(0)
    d = j - i - origin
    return (d > nxt) | (d < -pre)


_compressed_ok: dict = {}


_expected_cache: dict = {}


def _expected_compressed(rows: int, device) -> torch.Tensor:
    key = (rows, str(device))
    if key not in _expected_cache:
        _expected_cache[key] = _build_compressed(rows, device)
    return _expected_cache[key]


def _build_compressed(rows: int, device) -> torch.Tensor:
    n = COMPRESSED_MASK_SIZE
    top = torch.ones(n, n, dtype=torch.bool, device=device).triu(1)
    if rows == n:
        return top
    bottom = torch.zeros(rows - n, n, dtype=torch.bool, device=device)
    bottom[:, n // 2:] = True
    return torch.cat([top, bottom], 0)


def _mask_key(mask: torch.Tensor) -> tuple:
    # no device: the backward reference sees the npu mask the forward checked as its host alias
    # (same memory, a fresh version counter); a mask changed in place is caught by the forward
    return (mask.data_ptr(), mask._version, tuple(mask.shape), tuple(mask.stride()), mask.dtype)


def causal_compressed_mask(device) -> torch.Tensor:
    """A new ``triu(ones(2048, 2048), 1)`` bool mask on ``device`` (what torch_npu's SDPA builds per causal
    call), already known to :func:`check_compressed_mask` for ``sparse_mode=2``: no content check."""
    mask = _expected_compressed(COMPRESSED_MASK_SIZE, device).clone()
    _compressed_ok[2] = _mask_key(mask)
    return mask


def check_compressed_mask(mask: torch.Tensor, sparse_mode: int, op: str = _OP) -> None:
    """Require the optimised mask torch_npu needs for ``sparse_mode`` 2/3/4/6/7/8.

    Modes 2, 3, 4, 7, 8: ``torch.triu(torch.ones(2048, 2048), diagonal=1).bool()`` (or uint8),
    optionally with leading singleton/batch dims; mode 6: the 3072x2048 prefix mask (that triu
    on top of 1024 rows whose left half is 0 and right half 1).
    """
    rows = _PREFIX_MASK_ROWS if sparse_mode == 6 else COMPRESSED_MASK_SIZE
    wanted = f"[{rows}, {COMPRESSED_MASK_SIZE}]"
    check(
        mask.dim() in (2, 4) and tuple(mask.shape[-2:]) == (rows, COMPRESSED_MASK_SIZE),
        f"{op}: sparse_mode={sparse_mode} needs the compressed atten_mask of shape {wanted}, "
        f"but got {list(mask.shape)}. Build it with "
        + (
            "torch.triu(torch.ones(2048, 2048), diagonal=1).bool()"
            if rows == COMPRESSED_MASK_SIZE
            else "the 2048x2048 triu mask stacked on 1024 rows that are 0 in the left and 1 in the right half"
        )
        + ".",
    )
    key = _mask_key(mask)
    if _compressed_ok.get(sparse_mode) == key:
        return
    expected = _expected_compressed(rows, mask.device)
    flat = mask.reshape(-1, rows * COMPRESSED_MASK_SIZE)
    # Byte-wise comparison through int64 views: ~0.5 ms for 4 MB, where torch.equal takes ~20 ms on
    # CPU (HF builds a fresh mask per call). Masks holding bytes other than 0/1 take the slow path.
    exp64 = expected.reshape(-1).view(torch.uint8).view(torch.int64)
    same = flat.is_contiguous() and all(
        not bool((row.view(torch.int64) != exp64).any()) for row in flat.view(torch.uint8))
    if not same:
        same = not bool((mask.bool().reshape(-1, rows, COMPRESSED_MASK_SIZE) != expected).any())
    if not same:
        raise ValueError(
            f"{op}: sparse_mode={sparse_mode} treats atten_mask as the compressed {wanted} "
            "pattern (True above the diagonal) and derives the real mask from it; this atten_mask "
            "has other contents, which real Ascend hardware would silently turn into wrong "
            "attention. Pass torch.triu(torch.ones(2048, 2048), diagonal=1).bool() here, or use "
            "sparse_mode=0/1 with your own [Sq, Skv] mask."
        )
    _compressed_ok[sparse_mode] = key


def _user_mask_4d(mask: torch.Tensor, b: int, n: int, sq: int, skv: int) -> torch.Tensor:
    """Validate an explicit BNSS/B1SS/11SS/SS mask and return it as bool broadcastable to BNSS."""
    shape = tuple(mask.shape)
    ok = (mask.dim() == 2 and shape == (sq, skv)) or (
        mask.dim() == 4 and shape[2:] == (sq, skv) and shape[0] in (1, b) and shape[1] in (1, n)
        and not (shape[0] == 1 != b and shape[1] == n != 1)
    )
    check(
        ok,
        f"{_OP}: atten_mask shape {list(shape)} is not one of [B,N,Sq,Skv], [B,1,Sq,Skv], [1,1,Sq,Skv] "
        f"or [Sq,Skv] = [{b},{n},{sq},{skv}] for this input.",
    )
    m = mask.bool()
    return m if m.dim() == 4 else m.view(1, 1, sq, skv)


# ----------------------------------------------------------------------------- dropout
def _seed_offset(device: torch.device) -> tuple[int, int]:
    """Take a (seed, offset) pair from the default generator of ``device`` and advance it: on the npu
    the Philox state itself, as torch_npu's kernel takes ``philox_engine_inputs(10)``."""
    if device.type == "npu":
        from ascend_compat.simulator import _rng

        seed, offset = _rng.philox_engine_inputs(device.index if device.index is not None else 0, 10)
        return (seed - 2**64 if seed >= 2**63 else seed), offset
    module = getattr(torch, device.type, None)
    seed_fn = getattr(module, "initial_seed", None) if device.type != "cpu" else None
    seed = int(seed_fn()) if callable(seed_fn) else int(torch.initial_seed())
    offset = int(torch.randint(0, 2**62, (1,), device=device).item())
    # the op returns the generator's uint64 seed as a schema ``int`` (int64), as torch_npu's C++ cast does
    return (seed - 2**64 if seed >= 2**63 else seed), offset


def keep_mask(numels: int, keep_prob: float, seed: int, offset: int, device) -> torch.Tensor:
    """The flat bool dropout keep-mask (True = kept) determined by ``(seed, offset)``."""
    gen = torch.Generator(device="cpu")
    gen.manual_seed((seed * 0x9E3779B97F4A7C15 + offset) % (2**63 - 1))
    return (torch.rand(numels, generator=gen) < keep_prob).to(device)


# ----------------------------------------------------------------------------- core
def attention_core(q, k, v, masked=None, pse=None, scale=1.0, keep=None, keep_prob=1.0, sink=None,
                   pse_after_scale=False):
    """Reference attention on [B, N, S, D] tensors; differentiable; any float dtype.

    ``masked`` is a bool tensor broadcastable to [B, Nq, Sq, Skv] (True = masked out), ``pse`` a
    float tensor broadcastable to it, ``keep`` the bool keep-mask of dropout in [B, Nq, Sq, Skv]
    or None, ``sink`` one extra per-head logit [Nq]. ``pse`` is added before scaling
    (``scale·(QKᵀ + pse)``) unless ``pse_after_scale`` (``scale·QKᵀ + pse``). Returns ``(out [B,Nq,Sq,Dv], row_max,
    row_sum)`` in the computation dtype (float64 stays float64, everything else is float32).
    """
    cdt = torch.float64 if q.dtype == torch.float64 else torch.float32
    nq, nkv = q.shape[1], k.shape[1]
    if nq != nkv:
        k = k.repeat_interleave(nq // nkv, dim=1)
        v = v.repeat_interleave(nq // nkv, dim=1)
    scores = torch.matmul(q.to(cdt), k.to(cdt).transpose(-1, -2))
    if pse is not None and not pse_after_scale:
        scores = scores + pse.to(cdt)
    scores = scores * scale
    if pse is not None and pse_after_scale:
        scores = scores + pse.to(cdt)
    if masked is not None:
        scores = scores.masked_fill(masked, float("-inf"))
    if sink is not None:
        sink_col = sink.to(cdt).view(1, nq, 1, 1).expand(scores.shape[0], nq, scores.shape[2], 1)
        scores = torch.cat([scores, sink_col], dim=-1)
    row_max = scores.amax(dim=-1, keepdim=True)
    safe_max = torch.where(torch.isinf(row_max), torch.zeros_like(row_max), row_max).detach()
    e = torch.exp(scores - safe_max)
    row_sum = e.sum(dim=-1, keepdim=True)
    probs = e / row_sum.clamp_min(torch.finfo(cdt).tiny)
    if sink is not None:
        probs = probs[..., :-1]
    if keep is not None:
        probs = probs * keep.to(cdt) / keep_prob
    out = torch.matmul(probs, v.to(cdt))
    return out, row_max.squeeze(-1).detach(), row_sum.squeeze(-1).detach()


# ----------------------------------------------------------------------------- validation
def _cumulative_to_lengths(name: str, cums: list[int], total: int) -> list[int]:
    lengths, prev, ended = [], 0, False
    for i, c in enumerate(cums):
        if ended or (c == 0 and prev > 0):
            check(c == 0, f"{_OP}: {name}={cums}: only trailing zeros may follow a decrease (entry {i} is {c}).")
            ended = True
            lengths.append(0)
            continue
        check(c >= prev, f"{_OP}: {name}={cums} must be cumulative (non-decreasing) ends without a leading 0, "
                         "e.g. lengths [2, 3] -> [2, 5] (flash-attn cu_seqlens[1:]).")
        lengths.append(c - prev)
        prev = c
    check(prev <= total, f"{_OP}: {name}={cums} ends at {prev}, beyond the {total} tokens of the input.")
    return lengths


def _validate_common(query, key, value, head_num, layout, keep_prob, sparse_mode, pse, atten_mask):
    for name, t in (("query", query), ("key", key), ("value", value)):
        check(t.dim() in (3, 4), f"The shapes of the input {name} should be 3 or 4 dimensional, but got "
                                 f"{t.dim()}-dimensional")
        check_float_dtype(_OP, name, t)
    check(query.dtype == key.dtype == value.dtype,
          f"{_OP}: query, key and value must have the same dtype, got {query.dtype}, {key.dtype}, {value.dtype}.",
          "TYPE")
    check(0 < keep_prob <= 1, f"The keep_prob value must be in range of (0, 1], but got {keep_prob}")
    if layout == "TND":
        check(0 <= sparse_mode < 5 or 5 < sparse_mode <= 8,
              f"The sparse_mode value must be in range of [0,5) or (5,8], but got {sparse_mode}")
    else:
        check(0 <= sparse_mode <= 6, f"The sparse_mode value must be in range of [0,6], but got {sparse_mode}")
    check(hasattr(head_num, "__index__") and not isinstance(head_num, bool) and head_num.__index__() > 0,
          f"{_OP}: head_num must be a positive int, got {head_num!r}.")
    if pse is not None:
        check(pse.dtype == query.dtype, f"{_OP}: pse dtype {pse.dtype} must equal the query dtype {query.dtype}.",
              "TYPE")
    if atten_mask is not None:
        check(atten_mask.dtype in (torch.bool, torch.uint8),
              f"{_OP}: atten_mask must be torch.bool or torch.uint8 (True/1 = masked out), got "
              f"{atten_mask.dtype}. A float additive mask is not accepted: use (mask < 0) or ~keep_mask.",
              "TYPE")
    for t in (key, value, pse, atten_mask):
        if t is not None:
            check(t.device == query.device,
                  "Expected all tensors to be on the same device. Expected NPU tensor, please check whether "
                  "the input tensor device is correct.")


def _check_heads(nq: int, nkv: int, dq: int, dk: int, dv: int) -> None:
    check(nkv > 0 and nq % nkv == 0,
          f"{_OP}: the head number of query ({nq}) must be a non-zero integer multiple of that of key/value "
          f"({nkv}) (GQA/MQA).")
    check(nq <= 256, f"{_OP}: head_num {nq} exceeds the supported range 1~256.")
    check(dq == dk and dk >= dv and 1 <= dq <= 768,
          f"{_OP}: head dims must satisfy Dq == Dk >= Dv and 1 <= D <= 768, got Dq={dq}, Dk={dk}, Dv={dv}.")


# ----------------------------------------------------------------------------- public op
def npu_fusion_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    head_num: int,
    input_layout: str,
    pse: torch.Tensor | None = None,
    padding_mask: torch.Tensor | None = None,
    atten_mask: torch.Tensor | None = None,
    scale: float = 1.0,
    keep_prob: float = 1.0,
    pre_tockens: int = _MAX_TOKENS,
    next_tockens: int = _MAX_TOKENS,
    inner_precise: int = 0,
    prefix=None,
    actual_seq_qlen=None,
    actual_seq_kvlen=None,
    sparse_mode: int = 0,
    gen_mask_parallel: bool = True,
    sync: bool = False,
    softmax_layout: str = "",
    sink: torch.Tensor | None = None,
    dropout_mask: torch.Tensor | None = None,
    seed: int = 0,
    offset: int = 0,
):
    """``torch_npu.npu_fusion_attention`` reference; see the module docstring for the contract.

    Returns ``(attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels)``.
    ``gen_mask_parallel``/``sync``/``inner_precise`` only affect speed on the hardware. Without dropout,
    npu inputs are computed on their host memory in one trip, so the device sees only the outputs, as
    with torch_npu's one fused kernel (its intermediates never reach the caching allocator); with dropout
    the mask is drawn from the device's generator.
    """
    if query.device.type == "npu" and keep_prob >= 1.0 and dropout_mask is None and not _differentiable(
            query, key, value, pse, sink):
        return _dispatch.call_on_host(_fusion_attention_host, (
            query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, scale, keep_prob, pre_tockens,
            next_tockens, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, softmax_layout, sink))
    return _fusion_attention(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, scale,
                             keep_prob, pre_tockens, next_tockens, prefix, actual_seq_qlen, actual_seq_kvlen,
                             sparse_mode, softmax_layout, sink, dropout_mask, replay=None)


def _differentiable(*tensors) -> bool:
    """True when autograd must see the reference's own ops: called as a Python function (not as the
    registered op, whose kernel runs below autograd with its own backward) on inputs that need grad."""
    if torch._C._dispatch_tls_is_dispatch_key_excluded(torch._C.DispatchKey.AutogradPrivateUse1):
        return False
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _fusion_attention_host(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, scale, keep_prob,
                           pre_tockens, next_tockens, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode,
                           softmax_layout, sink):
    return _fusion_attention(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, scale, keep_prob,
                             pre_tockens, next_tockens, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode,
                             softmax_layout, sink, None, replay=None)


def _fusion_attention(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, scale, keep_prob,
                      pre_tockens, next_tockens, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode,
                      softmax_layout, sink, dropout_mask, replay, pse_after_scale=False):
    layout = str(input_layout).upper()
    if hasattr(head_num, "__index__") and not isinstance(head_num, bool):
        head_num = head_num.__index__()
    check(layout in _LAYOUTS,
          f"The input_layout should be BSH/SBH/BNSD/BSND/TND(case-insensitive), but got {input_layout}")
    _validate_common(query, key, value, head_num, layout, keep_prob, sparse_mode, pse, atten_mask)
    if padding_mask is not None:
        raise not_supported(_OP, "padding_mask (torch_npu documents it as not supported yet)")
    if dropout_mask is not None:
        raise not_supported(_OP, "an explicit dropout_mask")
    check(softmax_layout in ("", "TND") and (softmax_layout == "" or layout == "TND"),
          f"{_OP}: softmax_layout must be '' or 'TND' (TND only with input_layout='TND'), got {softmax_layout!r}.")
    if sparse_mode in (7, 8) and pse is not None:
        raise RuntimeError(f"{_OP}: sparse_mode {sparse_mode} does not support pse.")
    if atten_mask is None and sparse_mode != 0:
        warnings.warn(
            f"{_OP}: sparse_mode={sparse_mode} without atten_mask computes FULL attention on torch_npu "
            "(no causal/band masking); pass the compressed 2048x2048 triu mask if you meant masking.",
            stacklevel=3,
        )
    if atten_mask is not None and sparse_mode in (2, 3, 4, 6, 7, 8):
        check_compressed_mask(atten_mask, sparse_mode)
    if sink is not None:
        check(sink.numel() == head_num, f"{_OP}: sink must hold one value per query head ({head_num}), "
                                        f"got shape {list(sink.shape)}.")
    prefix_list = int_list(_OP, "prefix", prefix)
    qlens_c = int_list(_OP, "actual_seq_qlen", actual_seq_qlen)
    kvlens_c = int_list(_OP, "actual_seq_kvlen", actual_seq_kvlen)
    if layout == "TND":
        check(bool(qlens_c) and bool(kvlens_c) and len(qlens_c) == len(kvlens_c),
              "the size of actual_seq_qlen and actual_seq_kvlen must be the same and cannot be empty.")
        return _varlen(query, key, value, head_num, atten_mask, pse, scale, keep_prob, pre_tockens, next_tockens,
                       prefix_list, qlens_c, kvlens_c, sparse_mode, softmax_layout, sink, replay)
    check(qlens_c is None and kvlens_c is None,
          f"{_OP}: actual_seq_qlen/actual_seq_kvlen select the varlen kernel, which needs input_layout='TND' "
          f"(packed [T, N, D]); got input_layout={input_layout!r}.")
    return _dense(query, key, value, head_num, layout, atten_mask, pse, scale, keep_prob, pre_tockens,
                  next_tockens, prefix_list, sparse_mode, sink, replay, pse_after_scale)


def _dropout(numels, keep_prob, device, replay):
    if keep_prob >= 1.0:
        return None, 0, 0
    seed, offset = replay if replay is not None else _seed_offset(device)
    return keep_mask(numels, keep_prob, seed, offset, device), seed, offset


def _stats(row_max, row_sum):
    return (row_max.float().unsqueeze(-1).expand(*row_max.shape, 8).contiguous(),
            row_sum.float().unsqueeze(-1).expand(*row_sum.shape, 8).contiguous())


def _dense(query, key, value, head_num, layout, atten_mask, pse, scale, keep_prob, pre, nxt, prefix, sparse_mode,
           sink, replay, pse_after_scale=False):
    check(query.dim() == (3 if layout in ("BSH", "SBH") else 4),
          f"{_OP}: input_layout {layout} needs {3 if layout in ('BSH', 'SBH') else 4}-dimensional inputs, "
          f"got query of shape {list(query.shape)}.")
    if layout in ("BSH", "SBH"):
        hq = query.shape[-1]
        check(hq % head_num == 0, f"{_OP}: the query hidden size {hq} is not divisible by head_num {head_num}.")
        d = hq // head_num
        check(key.shape[-1] % d == 0, f"{_OP}: the key hidden size {key.shape[-1]} is not a multiple of the "
                                      f"head dim {d} (= query hidden size / head_num).")
        nkv = key.shape[-1] // d
        check(value.shape[-1] % nkv == 0, f"{_OP}: the value hidden size {value.shape[-1]} is not divisible by "
                                          f"the key/value head number {nkv}.")
        q = _to_bnsd(query, layout, head_num, None)
        k = _to_bnsd(key, layout, nkv, None)
        v = _to_bnsd(value, layout, nkv, None)
    else:
        q, k, v = (_to_bnsd(t, layout, None, None) for t in (query, key, value))
        check(q.shape[1] == head_num, f"{_OP}: head_num {head_num} does not match the N axis ({q.shape[1]}) of "
                                      f"the {layout} query.")
    b, nq, sq, dq = q.shape
    _, nkv, skv, dk = k.shape
    check(k.shape[0] == b and v.shape[0] == b, f"{_OP}: batch sizes of query, key and value must be equal.")
    check(tuple(k.shape[:3]) == tuple(v.shape[:3]),
          f"{_OP}: key and value must have the same shape except D, got {list(key.shape)} and {list(value.shape)}.")
    _check_heads(nq, nkv, dq, dk, v.shape[3])
    dev = query.device

    masked = None
    if atten_mask is not None:
        if sparse_mode in (0, 1, 5):
            masked = _user_mask_4d(atten_mask, b, nq, sq, skv)
            if sparse_mode == 0 and (pre < sq or nxt < skv):
                masked = masked | band_masked(sq, skv, pre, nxt, 0, dev)
            if sparse_mode == 5:
                check(atten_mask.dim() == 4 and atten_mask.shape[0] == b,
                      f"{_OP}: sparse_mode 5 needs a BNSS or B1SS atten_mask.")
                check(prefix is not None and len(prefix) == b,
                      f"{_OP}: sparse_mode 5 needs prefix with one entry per batch ({b}).")
        elif sparse_mode == 2:
            masked = band_masked(sq, skv, _MAX_TOKENS, 0, 0, dev)
        elif sparse_mode == 3:
            masked = band_masked(sq, skv, _MAX_TOKENS, 0, skv - sq, dev)
        elif sparse_mode == 4:
            masked = band_masked(sq, skv, pre, nxt, skv - sq, dev)
        elif sparse_mode == 6:
            masked = _prefix_masked(prefix, b, sq, skv, dev)

    pse_b = None
    if pse is not None:
        ps = tuple(pse.shape)
        check(pse.dim() == 4 and ps[1] == nq and ps[3] == skv and ps[0] in (1, b) and ps[2] in (1, sq)
              and not (ps[0] == 1 and ps[2] == 1 and b != 1),
              f"{_OP}: pse shape {list(ps)} is not one of [B,N,Sq,Skv], [B,N,1,Skv], [1,N,Sq,Skv] "
              f"= [{b},{nq},{sq},{skv}].")
        if ps[2] == 1024 and sq > 1024:
            raise not_supported(_OP, "the compressed alibi pse (last 1024 rows)")
        pse_b = pse

    numels = b * nq * sq * skv
    keep, seed, offset = _dropout(numels, keep_prob, dev, replay)
    if keep is not None:
        keep = keep.view(b, nq, sq, skv)
    out, row_max, row_sum = attention_core(q, k, v, masked, pse_b, scale, keep, keep_prob, sink, pse_after_scale)
    out = _from_bnsd(out.to(query.dtype), layout)
    smax, ssum = _stats(row_max, row_sum)
    return out, smax, ssum, query.new_empty(0), seed, offset, numels


def _prefix_masked(prefix, b, sq, skv, dev):
    check(prefix is not None and len(prefix) >= b,
          f"{_OP}: sparse_mode 6 needs prefix with one entry per batch ({b}), got {prefix}.")
    causal = band_masked(sq, skv, _MAX_TOKENS, 0, skv - sq, dev)
    j = torch.arange(skv, device=dev).view(1, 1, 1, skv)
    pre = torch.tensor(prefix[:b], device=dev).view(b, 1, 1, 1)
    return causal.view(1, 1, sq, skv) & (j >= pre)


def _varlen(query, key, value, head_num, atten_mask, pse, scale, keep_prob, pre, nxt, prefix, qcum, kvcum,
            sparse_mode, softmax_layout, sink, replay):
    for name, t in (("query", query), ("key", key), ("value", value)):
        check(t.dim() == 3, f"{_OP}: input_layout TND needs 3-dimensional [T, N, D] inputs, got {name} of shape "
                            f"{list(t.shape)}.")
    if pse is not None:
        raise not_supported(_OP, "pse with input_layout TND")
    tq, nq, dq = query.shape
    tk, nkv, dk = key.shape
    check(nq == head_num, f"{_OP}: head_num {head_num} does not match the N axis ({nq}) of the TND query.")
    check(key.shape[:2] == value.shape[:2], f"{_OP}: key and value must have the same shape except D.")
    _check_heads(nq, nkv, dq, dk, value.shape[2])
    qlens = _cumulative_to_lengths("actual_seq_qlen", qcum, tq)
    kvlens = _cumulative_to_lengths("actual_seq_kvlen", kvcum, tk)
    nb = len(qlens)
    dev = query.device
    if atten_mask is not None and sparse_mode in (0, 1):
        check(atten_mask.dim() == 2 and atten_mask.shape[0] >= max(qlens) and atten_mask.shape[1] >= max(kvlens),
              f"{_OP}: with input_layout TND atten_mask must be [maxSq, maxSkv] (SS), got {list(atten_mask.shape)}.")
    # Batches that take part: trailing all-zero batches are skipped (torch_npu semantics).
    active = [i for i in range(nb) if qlens[i] > 0 or kvlens[i] > 0]
    first, last = (active[0], active[-1]) if active else (-1, -1)

    numels = nq * sum(lq * lk for lq, lk in zip(qlens, kvlens))
    keep_flat, seed, offset = _dropout(numels, keep_prob, dev, replay)

    outs, maxes, sums = [], [], []
    qs = ks = kpos = 0
    for i in range(nb):
        lq, lk = qlens[i], kvlens[i]
        if lq == 0 or lk == 0:  # nothing to attend to: zero rows (if any), like fully masked rows
            cdt = torch.float64 if query.dtype == torch.float64 else torch.float32
            outs.append(torch.zeros(lq, nq, value.shape[2], dtype=cdt, device=dev))
            maxes.append(torch.full((nq, lq), float("-inf"), dtype=cdt, device=dev))
            sums.append(torch.zeros(nq, lq, dtype=cdt, device=dev))
            qs += lq
            ks += lk
            continue
        q = query[qs:qs + lq].transpose(0, 1).unsqueeze(0)
        k = key[ks:ks + lk].transpose(0, 1).unsqueeze(0)
        v = value[ks:ks + lk].transpose(0, 1).unsqueeze(0)
        masked = None
        if atten_mask is not None:
            if sparse_mode in (0, 1):
                masked = atten_mask[:lq, :lk].bool()
                if sparse_mode == 0 and (pre < lq or nxt < lk):
                    masked = masked | band_masked(lq, lk, pre, nxt, 0, dev)
            elif sparse_mode == 2 or (sparse_mode == 8 and i != first):
                masked = band_masked(lq, lk, _MAX_TOKENS, 0, 0, dev)
            elif sparse_mode == 3 or (sparse_mode == 7 and i != last):
                masked = band_masked(lq, lk, _MAX_TOKENS, 0, lk - lq, dev)
            elif sparse_mode in (4, 7, 8):
                masked = band_masked(lq, lk, pre, nxt, lk - lq, dev)
            elif sparse_mode == 6:
                masked = _prefix_masked([prefix[i]] if prefix and i < len(prefix) else None, 1, lq, lk, dev)
        keep = None
        if keep_flat is not None:
            keep = keep_flat[kpos:kpos + nq * lq * lk].view(1, nq, lq, lk)
            kpos += nq * lq * lk
        out, row_max, row_sum = attention_core(q, k, v, masked, None, scale, keep, keep_prob, sink)
        outs.append(out[0].transpose(0, 1))
        maxes.append(row_max[0])
        sums.append(row_sum[0])
        qs += lq
        ks += lk
    cdt = outs[0].dtype if outs else torch.float32
    if qs < tq:  # tokens past the last cumulative length are not computed
        outs.append(torch.zeros(tq - qs, nq, value.shape[2], dtype=cdt, device=dev))
        maxes.append(torch.full((nq, tq - qs), float("-inf"), dtype=cdt, device=dev))
        sums.append(torch.zeros(nq, tq - qs, dtype=cdt, device=dev))
    out = torch.cat(outs, 0).to(query.dtype)
    row_max = torch.cat(maxes, 1)  # [N, T]
    row_sum = torch.cat(sums, 1)
    if softmax_layout == "TND":
        row_max, row_sum = row_max.transpose(0, 1), row_sum.transpose(0, 1)
    smax, ssum = _stats(row_max, row_sum)  # [N, T, 8] (NTD) or [T, N, 8]
    smax, ssum = smax.reshape(tq, nq, 8), ssum.reshape(tq, nq, 8)
    return out, smax, ssum, query.new_empty(0), seed, offset, numels


_AUTOGRAD_KEYS = (torch._C.DispatchKey.AutogradFunctionality, torch._C.DispatchKey.ADInplaceOrView,
                  torch._C.DispatchKey.AutogradOther, torch._C.DispatchKey.AutogradNestedTensor)


@contextlib.contextmanager
def _autograd_dispatch():
    """Let autograd record again inside a kernel reached below the autograd keys (the grad op has no
    autograd kernel of its own, so torch's fallback and DTensor call it with those keys excluded)."""
    was = [torch._C._dispatch_tls_is_dispatch_key_excluded(k) for k in _AUTOGRAD_KEYS]
    for k in _AUTOGRAD_KEYS:
        torch._C._dispatch_tls_set_dispatch_key_excluded(k, False)
    try:
        yield
    finally:
        for k, excluded in zip(_AUTOGRAD_KEYS, was):
            torch._C._dispatch_tls_set_dispatch_key_excluded(k, excluded)


def npu_fusion_attention_grad(
    query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None,
    softmax_max=None, softmax_sum=None, softmax_in=None, attention_in=None, scale_value=1.0, keep_prob=1.0,
    pre_tockens=_MAX_TOKENS, next_tockens=_MAX_TOKENS, inner_precise=0, seed=0, offset=0, numels=0, prefix=None,
    actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
    softmax_layout="", sink=None,
):
    """``torch_npu.npu_fusion_attention_grad``: ``(dq, dk, dv, dpse, dsink)`` for upstream grad ``dy``.

    Recomputes the forward (with the dropout mask of ``seed``/``offset``) and differentiates it;
    ``softmax_max``/``softmax_sum``/``attention_in`` are accepted and not needed. ``dpse`` is None
    without ``pse``; ``dsink`` is an empty tensor without ``sink``. On npu tensors the whole
    computation runs on their host memory (one trip through the simulator instead of one per op;
    the recompute draws no random numbers, so nothing depends on the device).
    """
    kwargs = dict(pse=pse, padding_mask=padding_mask, atten_mask=atten_mask, scale_value=scale_value,
                  keep_prob=keep_prob, pre_tockens=pre_tockens, next_tockens=next_tockens, seed=seed, offset=offset,
                  prefix=prefix, actual_seq_qlen=actual_seq_qlen, actual_seq_kvlen=actual_seq_kvlen,
                  sparse_mode=sparse_mode, softmax_layout=softmax_layout, sink=sink)
    if query.device.type == "npu":
        return _dispatch.call_on_host(_grad, (query, key, value, dy, head_num, input_layout), kwargs)
    return _grad(query, key, value, dy, head_num, input_layout, **kwargs)


def _grad(query, key, value, dy, head_num, input_layout, *, pse, padding_mask, atten_mask, scale_value, keep_prob,
          pre_tockens, next_tockens, seed, offset, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode,
          softmax_layout, sink):
    with torch.enable_grad(), _autograd_dispatch():
        leaves = [t.detach().requires_grad_(True) for t in (query, key, value)]
        pse_l = pse.detach().requires_grad_(True) if pse is not None else None
        sink_l = sink.detach().requires_grad_(True) if sink is not None else None
        out = _fusion_attention(*leaves, head_num, input_layout, pse_l, padding_mask, atten_mask, scale_value,
                                keep_prob, pre_tockens, next_tockens, prefix, actual_seq_qlen, actual_seq_kvlen,
                                sparse_mode, softmax_layout, sink_l, None, replay=(seed, offset))[0]
        inputs = leaves + [t for t in (pse_l, sink_l) if t is not None]
        grads = torch.autograd.grad(out, inputs, dy, allow_unused=True)
    # contiguous, as torch_npu allocates them (apply_tensor_without_format: the input's sizes, no strides)
    dq, dk, dv = (g.contiguous() if g is not None else torch.zeros(t.shape, dtype=t.dtype, device=t.device)
                  for g, t in zip(grads[:3], leaves))
    rest = list(grads[3:])
    dpse = rest.pop(0) if pse_l is not None else None
    dsink = rest.pop(0) if sink_l is not None else query.new_empty(0)
    return dq, dk, dv, dpse, dsink


def npu_fusion_attention_v2(
    query, key, value, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None, query_rope=None,
    key_rope=None, scale=1.0, keep_prob=1.0, pre_tokens=_MAX_TOKENS, next_tokens=_MAX_TOKENS, inner_precise=0,
    prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
    pse_type=1, q_start_idx=None, kv_start_idx=None, softmax_layout="", sink=None, dropout_mask=None, seed=0,
    offset=0,
):
    """``torch_npu.npu_fusion_attention_v2``: keyword-only variant with ``pre_tokens``/``next_tokens``.

    ``pse_type`` 1 (default) = ``scale·(QKᵀ + pse)`` as in v1, 0 = ``scale·QKᵀ + pse``; 2/3 (ALiBi
    generated inside the kernel) raise NotImplementedError. ``query_rope``/``key_rope`` (TND only,
    needs atten_mask) add ``Q_rope·K_ropeᵀ`` to ``Q·Kᵀ`` before scaling.
    """
    op = "npu_fusion_attention_v2"
    if pse_type in (2, 3):
        raise not_supported(op, f"pse_type={pse_type} (ALiBi generated inside the kernel)")
    check(pse_type in (0, 1), f"{op}: pse_type must be 0, 1, 2 or 3, got {pse_type}.")
    if (query_rope is None) != (key_rope is None):
        raise RuntimeError(f"{op}: query_rope and key_rope must be given together.")
    if query_rope is not None:
        check(str(input_layout).upper() == "TND" and atten_mask is not None and pse is None,
              f"{op}: query_rope/key_rope need input_layout='TND', an atten_mask and no pse.")
        dv = value.shape[-1]
        check(query.shape[-1] == dv, f"{op}: with query_rope the value head dim must equal the query head dim.")
        query = torch.cat([query, query_rope], dim=-1)
        key = torch.cat([key, key_rope], dim=-1)
    return _fusion_attention(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, scale,
                             keep_prob, pre_tokens, next_tokens, prefix, actual_seq_qlen, actual_seq_kvlen,
                             sparse_mode, softmax_layout, sink, dropout_mask, replay=None,
                             pse_after_scale=(pse_type == 0))
