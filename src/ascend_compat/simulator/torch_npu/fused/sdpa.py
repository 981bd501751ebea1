"""torch_npu's own ``aten::scaled_dot_product_attention`` and ``aten::_fused_sdp_choice`` on the npu device.

Contract (torch_npu 2.14.0 wheel: ``npu_native_functions_by_codegen.yaml`` lists both ops as op_api
kernels, ``libtorch_npu.so`` holds ``wrapper_NPU__scaled_dot_product_attention``,
``wrapper_AutogradNPU__scaled_dot_product_attention`` and ``wrapper_NPU___fused_sdp_choice``; the
kernels are op-plugin's ``ScaledDotProductAttentionKernelNpuOpApi.cpp`` and
``FusedSdpChoiceKernelNpuOpApi.cpp``):

* torch's composite SDPA never runs on the npu device: torch_npu registers its kernel for
  ``PrivateUse1`` and, as torchnpugen does for every ``CompositeImplicitAutograd`` op it implements,
  for ``AutogradPrivateUse1``. Autograd therefore records the ops that kernel calls.
* ``_fused_sdp_choice`` returns ``SDPBackend.OVERRIDEABLE`` (4) for every input; nothing in
  torch_npu's SDPA consults it (torch's composite, which would, is shadowed).
* The kernel checks q/k/v share dtype and device, are at least 2-D, and an ``attn_mask`` is bool or
  the query dtype (``RuntimeError`` ending in ``ERR01007 OPS feature not supported``), then picks:

  - **fusion** (``torch_npu.npu_fusion_attention``, BNSD, ``head_num = Nq``): query dtype float16,
    bfloat16 or float32; no mask or a bool mask of 2 or 4 dims; q/k/v 4-D; ``Nq <= 2048``,
    ``Nkv <= 2048``, ``Nq % Nkv == 0`` (GQA without ``enable_gqa``); head dim ``<= 512``; SoC
    Ascend910B1 or newer. The mask becomes ``~attn_mask`` (True = masked out); ``is_causal`` becomes
    the compressed ``triu(ones(2048, 2048), 1)`` mask with ``sparse_mode=2``, ``next_tockens=0``, and
    with an explicit mask raises "The attn_mask should be none when is_causal is true";
    ``scale`` defaults to ``1/sqrt(D)``; ``keep_prob = 1 - dropout_p``. Output 0 is returned. More
    than 256 query heads pass this test but fail in ``npu_fusion_attention`` (its documented range).
  - **math** (``aten::_scaled_dot_product_attention_math`` without ``enable_gqa``): everything else
    (a float mask, a 3-D bool mask, 3-D inputs, an older SoC, > 2048 heads, head dim > 512); a bool
    mask is first turned into a float 0/-inf mask of the query dtype.

  op-plugin's third branch (``npu_fused_infer_attention_score`` for fp16/bf16 inference) is never
  reached: every input it accepts is taken by the fusion branch first, so it is not simulated.

With DTensor q/k/v the same kernel runs on the DTensors; ``npu_fusion_attention`` then reaches
DTensor, whose sharding rules torch_npu provides (``simulator.torch_npu.distributed.tensor``).
"""
from __future__ import annotations

import math
from typing import Optional

import torch

from ascend_compat.simulator.torch_npu.fused._errors import check
from ascend_compat.simulator.torch_npu.fused.attention import causal_compressed_mask

__all__ = ["SDP_BACKEND_OVERRIDEABLE", "fused_sdp_choice", "path", "scaled_dot_product_attention", "register"]

SDP_BACKEND_OVERRIDEABLE = 4
_N_LIMIT = 2048
_D_LIMIT = 512
_TOKEN_MAX = 2147483647
_LEFT_UP_CAUSAL = 2
_ASCEND910B1 = 220  # torch_npu's SocVersion::Ascend910B1

#: C++ TypeMeta names torch_npu's messages print for a dtype
_CXX_DTYPE = {torch.float32: "float", torch.float16: "c10::Half", torch.bfloat16: "c10::BFloat16",
              torch.float64: "double", torch.bool: "bool", torch.int64: "long int", torch.int32: "int",
              torch.uint8: "unsigned char", torch.int8: "signed char"}


def _cxx(dtype: torch.dtype) -> str:
    return _CXX_DTYPE.get(dtype, str(dtype).replace("torch.", ""))


def fused_sdp_choice(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None,
                     enable_gqa=False) -> int:
    """torch_npu's ``_fused_sdp_choice``: ``SDPBackend.OVERRIDEABLE`` for every input."""
    return SDP_BACKEND_OVERRIDEABLE


def _soc_version() -> int:
    from ascend_compat.simulator.torch_npu.npu.device import current_soc

    return current_soc().soc_version


def _validate(query, key, value, attn_mask) -> None:
    check(query.dtype == key.dtype == value.dtype,
          f"Expected query, key, and value to have the same dtype, but got query.dtype: {_cxx(query.dtype)} "
          f"key.dtype: {_cxx(key.dtype)} and value.dtype: {_cxx(value.dtype)} instead.", "NOT_SUPPORT")
    check(query.device == key.device == value.device,
          f"Expected query, key, and value to have the same device type, but got query.device: {query.device} "
          f"key.device: {key.device} and value.device: {value.device} instead.", "NOT_SUPPORT")
    check(query.dim() >= 2 and key.dim() >= 2 and value.dim() >= 2,
          f"Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: {query.dim()} "
          f"key.dim: {key.dim()} and value.dim: {value.dim()} instead.", "NOT_SUPPORT")
    if attn_mask is not None:
        check(attn_mask.dtype in (torch.bool, query.dtype),
              f"Expected attn_mask dtype to be bool or to match query dtype, but got attn_mask.dtype: "
              f"{_cxx(attn_mask.dtype)} and  query.dtype: {_cxx(query.dtype)} instead.", "NOT_SUPPORT")
        check(not query.is_nested and not key.is_nested,
              "Scaled_dot_product_attention: Nested tensors for query / key are not supported when an "
              "explicit attn_mask is set", "NOT_SUPPORT")


def path(query, key, value, attn_mask=None) -> str:
    """``"fusion"`` or ``"math"``: the branch torch_npu's kernel takes for these inputs (after validation)."""
    if not (query.dtype in (torch.float16, torch.bfloat16, torch.float32)
            and (attn_mask is None or attn_mask.dtype == torch.bool)
            and query.dim() == 4 and key.dim() == 4 and value.dim() == 4
            and query.size(1) <= _N_LIMIT and query.size(3) <= _D_LIMIT and key.size(1) <= _N_LIMIT
            and key.size(1) > 0 and query.size(1) % key.size(1) == 0
            and _soc_version() >= _ASCEND910B1):
        return "math"
    if attn_mask is not None and attn_mask.dim() not in (2, 4):
        return "math"
    return "fusion"


def _fusion(query, key, value, attn_mask, dropout_p, is_causal, scale):
    if is_causal:
        if attn_mask is not None:  # a bare TORCH_CHECK in op-plugin: no error-code suffix
            raise RuntimeError("The attn_mask should be none when is_causal is true, but got 1-value")
        mask = causal_compressed_mask(query.device)
    else:
        mask = None if attn_mask is None else torch.logical_not(attn_mask)
    scale = scale if scale is not None else 1.0 / math.sqrt(query.size(-1))
    out = torch.ops.npu.npu_fusion_attention(
        query, key, value, query.size(1), "BNSD", atten_mask=mask, scale=scale, keep_prob=1.0 - dropout_p,
        pre_tockens=_TOKEN_MAX, next_tockens=0 if is_causal else _TOKEN_MAX, inner_precise=0,
        sparse_mode=_LEFT_UP_CAUSAL if is_causal else 0, gen_mask_parallel=True, sync=False)
    return out[0]


def _math(query, key, value, attn_mask, dropout_p, is_causal, scale):
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        float_mask = torch.zeros_like(attn_mask, dtype=query.dtype)
        attn_mask = float_mask.masked_fill_(attn_mask.logical_not(), float("-inf"))
    return torch.ops.aten._scaled_dot_product_attention_math(
        query, key, value, attn_mask, dropout_p, is_causal, None, scale=scale)[0]


def scaled_dot_product_attention(query, key, value, attn_mask: Optional[torch.Tensor] = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, *,
                                 scale: Optional[float] = None, enable_gqa: bool = False) -> torch.Tensor:
    """torch_npu's SDPA kernel (PrivateUse1 and AutogradPrivateUse1); see the module docstring."""
    _validate(query, key, value, attn_mask)
    if path(query, key, value, attn_mask) == "fusion":
        return _fusion(query, key, value, attn_mask, dropout_p, is_causal, scale)
    return _math(query, key, value, attn_mask, dropout_p, is_causal, scale)


def register(native) -> Optional[torch.library.Library]:
    """Register both kernels for the ops the emulated torch_npu version has (``native``: its aten op
    names); return the Library to keep alive, or None when it has neither."""
    wanted = [op for op in ("scaled_dot_product_attention", "_fused_sdp_choice") if op in native]
    if not wanted:
        return None
    lib = torch.library.Library("aten", "IMPL")
    if "_fused_sdp_choice" in wanted:
        lib.impl("_fused_sdp_choice", fused_sdp_choice, "PrivateUse1")
    if "scaled_dot_product_attention" in wanted:
        for key in ("PrivateUse1", "AutogradPrivateUse1"):
            lib.impl("scaled_dot_product_attention", scaled_dot_product_attention, key)
    return lib
