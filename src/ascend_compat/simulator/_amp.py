"""Autocast for the simulated NPU: ``torch.autocast("npu", dtype=float16|bfloat16)``.

PyTorch registers no fallthrough for the AutocastPrivateUse1 key, so without one every op fails
under ``torch.autocast("npu")`` (docs/simulator_pitfalls.md, pitfall 8). On top of the fallthrough sit Python kernels using
CUDA's cast lists (``aten/src/ATen/autocast_mode.cpp``): lower precision, fp32, fp32 unless a
dtype is given, and promote to the widest input type. Casts of fp32 leaf tensors that require
grad (weights) to the autocast dtype are cached until the outermost autocast region exits, as
CUDA's cache does.
"""
from __future__ import annotations

import torch

_AUTOCAST_KS = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)
_cache: dict = {}

LOWER = (
    "_convolution.deprecated", "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc",
    "conv_transpose1d", "conv_transpose2d.input", "conv_transpose3d.input", "convolution", "prelu",
    "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm",
    "baddbmm", "bmm", "chain_matmul", "linalg_multi_dot", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell",
    "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "_scaled_dot_product_flash_attention",
    "scaled_dot_product_attention",
)
FP32 = (
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal",
    "rsqrt", "sinh", "tan", "pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar", "softplus",
    "layer_norm", "native_layer_norm", "group_norm", "frobenius_norm.dim", "nuclear_norm",
    "nuclear_norm.dim", "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss",
    "nll_loss2d", "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss",
    "mse_loss", "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss",
    "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist",
    "cdist", "renorm", "logsumexp", "upsample_nearest1d", "_upsample_nearest_exact1d",
    "upsample_nearest2d", "_upsample_nearest_exact2d", "upsample_nearest3d", "_upsample_nearest_exact3d",
    "upsample_linear1d", "upsample_bilinear2d", "_upsample_bilinear2d_aa", "upsample_trilinear3d",
    "upsample_bicubic2d", "_upsample_bicubic2d_aa",
    "upsample_nearest1d.vec", "_upsample_nearest_exact1d.vec", "upsample_nearest2d.vec",
    "_upsample_nearest_exact2d.vec", "upsample_nearest3d.vec", "_upsample_nearest_exact3d.vec",
    "upsample_linear1d.vec", "upsample_bilinear2d.vec", "_upsample_bilinear2d_aa.vec",
    "upsample_trilinear3d.vec", "upsample_bicubic2d.vec", "_upsample_bicubic2d_aa.vec",
)
FP32_SET_OPT_DTYPE = (
    "prod", "prod.dim_int", "prod.dim_Dimname", "softmax.int", "softmax.Dimname", "log_softmax.int",
    "log_softmax.Dimname", "cumprod", "cumprod.dimname", "cumsum", "cumsum.dimname",
    "linalg_vector_norm", "linalg_matrix_norm", "linalg_matrix_norm.str_ord", "sum", "sum.dim_IntList",
    "sum.dim_DimnameList",
)
FP32_APPEND_DTYPE = ("norm.Scalar", "norm.ScalarOpt_dim", "norm.names_ScalarOpt_dim")
PROMOTE = ("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler",
           "index_put", "tensordot", "scatter_add")
BANNED = ("binary_cross_entropy",)


def clear_cache() -> None:
    """Drop cached weight casts (called when the outermost autocast region exits)."""
    _cache.clear()


def _eligible(t) -> bool:
    return (isinstance(t, torch.Tensor) and t.device.type == "npu" and t.is_floating_point()
            and t.dtype != torch.float64)


def _cast(t, dtype):
    if not _eligible(t) or t.dtype == dtype:
        return t
    cacheable = (dtype != torch.float32 and t.dtype == torch.float32 and t.requires_grad and t.is_leaf
                 and not t._is_view() and torch.is_autocast_cache_enabled())
    if cacheable:
        hit = _cache.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
    out = t.to(dtype)
    if cacheable:
        _cache[id(t)] = (t, out)
    return out


def _cast_all(args, kwargs, dtype):
    def c(x):
        if isinstance(x, torch.Tensor):
            return _cast(x, dtype)
        if isinstance(x, (list, tuple)) and x and any(isinstance(e, torch.Tensor) for e in x):
            return type(x)(_cast(e, dtype) if isinstance(e, torch.Tensor) else e for e in x)
        return x
    return [c(a) for a in args], {k: c(v) for k, v in kwargs.items()}


def _call(op, args, kwargs):
    with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_KS):
        return op(*args, **kwargs)


def _lower(op):
    def kernel(*args, **kwargs):
        a, k = _cast_all(args, kwargs, torch.get_autocast_dtype("npu"))
        return _call(op, a, k)
    return kernel


def _fp32(op):
    def kernel(*args, **kwargs):
        a, k = _cast_all(args, kwargs, torch.float32)
        return _call(op, a, k)
    return kernel


def _fp32_opt_dtype(op):
    names = [a.name for a in op._schema.arguments]
    dtype_pos = names.index("dtype") if "dtype" in names else None

    def kernel(*args, **kwargs):
        given = kwargs.get("dtype") if dtype_pos is None or dtype_pos >= len(args) else args[dtype_pos]
        if given is None and args and _eligible(args[0]):
            a, k = _cast_all(args, kwargs, torch.float32)
            return _call(op, a, k)
        return _call(op, args, kwargs)
    return kernel


def _promote(op):
    def kernel(*args, **kwargs):
        widest = None
        for x in list(args) + list(kwargs.values()):
            xs = x if isinstance(x, (list, tuple)) else (x,)
            for t in xs:
                if _eligible(t):
                    widest = t.dtype if widest is None else torch.promote_types(widest, t.dtype)
        if widest is None:
            return _call(op, args, kwargs)
        a, k = _cast_all(args, kwargs, widest)
        return _call(op, a, k)
    return kernel


def _banned(op):
    def kernel(*args, **kwargs):
        raise RuntimeError(
            "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
            "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
            "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
            "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
            "safe to autocast.")
    return kernel


def _resolve(qualified: str):
    name, _, overload = qualified.partition(".")
    packet = getattr(torch.ops.aten, name, None)
    if packet is None:
        return None
    try:
        return getattr(packet, overload or "default")
    except AttributeError:
        return None


def register(fallback_lib: torch.library.Library, aten_lib: torch.library.Library) -> int:
    """Register the fallthrough and the cast-policy kernels; return how many op kernels."""
    fallback_lib.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    count = 0
    for names, factory in ((LOWER, _lower), (FP32, _fp32), (FP32_SET_OPT_DTYPE, _fp32_opt_dtype),
                           (FP32_APPEND_DTYPE, _fp32), (PROMOTE, _promote), (BANNED, _banned)):
        for q in names:
            op = _resolve(q)
            if op is None or torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "AutocastPrivateUse1"):
                continue
            aten_lib.impl(op, factory(op), "AutocastPrivateUse1")
            count += 1
    return count
