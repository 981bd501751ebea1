"""transformers on the NPU: ``attn_implementation="flash_attention_2"`` with flash-attn's full semantics.

What transformers (tested: 5.23) already does on an NPU, and what this module changes:

* ``is_torch_npu_available()`` is True once ``torch_npu`` imports and ``torch.npu.is_available()``
  (the simulator's stand-in satisfies both). ``modeling_flash_attention_utils._lazy_imports`` then
  takes the flash functions from ``transformers.integrations.npu_flash_attention`` instead of the
  ``flash_attn`` package, which cannot be installed on Ascend.
* Those NPU functions have no ``window_size`` parameter. transformers decides which keyword
  arguments to pass by inspecting the signature, so a model's ``sliding_window`` (Mistral, Qwen2
  with ``use_sliding_window``, Gemma...) is **silently dropped**: the model attends to the whole
  causal prefix and the output is wrong for sequences longer than the window. ``softcap`` gets a
  ValueError from transformers, which is correct.

:func:`apply` replaces ``npu_flash_attn_func`` / ``npu_flash_attn_varlen_func`` with functions that
call ascend-compat's flash-attn drop-in (:mod:`ascend_compat.ecosystem.dropins.flash_attn`), whose
signature includes ``window_size`` and ``softcap``: sliding windows become the fused kernel's band
mode, ``softcap`` raises NotImplementedError naming the alternative. With
``NPU_FA2_SPARSE_MODE=2`` (transformers' top-left causal alignment) the original functions keep
computing and a sliding window is refused instead of dropped. The cached choice of flash functions
(``_loaded_implementation``) is reset so a model loaded before :func:`apply` picks the new ones.

``device_map="auto"`` / integer ids: with torch >= 2.5 an int device means the current accelerator
(npu); on older torch the shim translates ``Tensor.to(int)`` (the transformers#37778/#38468
failure under ``transfer_to_npu``). Nothing here is needed for it; it is tested with this module.

Every change is a declared :class:`ascend_compat.cuda_shim.registry.Patch`, applied when its
module is imported (never importing transformers itself) and undone by ``ascend_compat.deactivate()``.
"""
from __future__ import annotations

from typing import Any

__all__ = ["apply", "patches", "TESTED_VERSIONS"]

TESTED_VERSIONS = "transformers>=5.23,<6"
_APPLIES_TO = "transformers>=4.50"
_NPU_FA = "transformers.integrations.npu_flash_attention"
_MFA = "transformers.modeling_flash_attention_utils"
_TOP_LEFT = 2
_PATCHES: list = []


def _top_left_mode() -> bool:
    import sys

    module = sys.modules.get(_NPU_FA)
    return getattr(module, "SPARSE_MODE", None) == _TOP_LEFT


def _refuse(window_size: Any, softcap: float) -> None:
    if tuple(window_size) != (-1, -1):
        raise NotImplementedError(
            "ascend-compat: a sliding window (window_size=%r) cannot be honoured with NPU_FA2_SPARSE_MODE=2 "
            "(top-left causal alignment); transformers would silently attend to the whole prefix. Unset "
            "NPU_FA2_SPARSE_MODE (bottom-right alignment, flash-attn's) or load the model with "
            'attn_implementation="sdpa".' % (tuple(window_size),))
    if softcap:
        raise NotImplementedError(
            'ascend-compat: softcap is not supported by the NPU fused attention; load the model with '
            'attn_implementation="eager".')


def _own_signature(wrapper):
    """transformers reads the signature (following ``__wrapped__``) to decide which kwargs to pass:
    pin the wrapper's own, which has ``window_size`` and ``softcap``."""
    import inspect

    wrapper.__signature__ = inspect.signature(wrapper, follow_wrapped=False)
    return wrapper


def _dense(original):
    from ascend_compat.cuda_shim.registry import hit, make_wrapper

    def npu_flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                            softcap=0.0, deterministic=False, **kwargs):
        if _top_left_mode():
            _refuse(window_size, softcap)
            return original(q, k, v, dropout_p=dropout_p, softmax_scale=softmax_scale, causal=causal, **kwargs)
        from ascend_compat.ecosystem.dropins.flash_attn import flash_attn_func

        hit("transformers flash_attention_2 -> ascend_compat flash_attn")
        return flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, tuple(window_size), softcap,
                               deterministic=deterministic)

    return _own_signature(make_wrapper(original, npu_flash_attn_func))


def _varlen(original):
    from ascend_compat.cuda_shim.registry import hit, make_wrapper

    def npu_flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None, max_seqlen_k=None,
                                   dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                                   softcap=0.0, deterministic=False, **kwargs):
        if _top_left_mode():
            _refuse(window_size, softcap)
            return original(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=dropout_p,
                            softmax_scale=softmax_scale, causal=causal, **kwargs)
        from ascend_compat.ecosystem.dropins.flash_attn import flash_attn_varlen_func

        hit("transformers flash_attention_2 (varlen) -> ascend_compat flash_attn")
        return flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                                      softmax_scale, causal, tuple(window_size), softcap,
                                      deterministic=deterministic)

    return _own_signature(make_wrapper(original, npu_flash_attn_varlen_func))


def patches() -> list:
    """The declared changes (same objects on every call, so applying twice is detectable)."""
    from ascend_compat.cuda_shim.registry import Patch

    if not _PATCHES:
        why = ("transformers' NPU flash functions lack window_size, so sliding windows were silently dropped; "
               "route through the ascend-compat flash-attn drop-in")
        _PATCHES.extend([
            Patch(f"{_NPU_FA}:npu_flash_attn_func", _dense, why, _APPLIES_TO, wrap=True, optional=True,
                  defer=True, concept="ecosystem"),
            Patch(f"{_NPU_FA}:npu_flash_attn_varlen_func", _varlen, why, _APPLIES_TO, wrap=True, optional=True,
                  defer=True, concept="ecosystem"),
            Patch(f"{_MFA}:_loaded_implementation", None,
                  "forget flash functions chosen before the patch (their kwargs filter lacks window_size)",
                  _APPLIES_TO, rebind=False, optional=True, defer=True, concept="ecosystem"),
        ])
    return list(_PATCHES)


def apply() -> int:
    """Declare the transformers patches (idempotent); returns how many were applied now.

    Patches for modules not yet imported are applied when transformers imports them. Requires an
    NPU (torch_npu, or the simulator) for the patched code paths to be used at all.
    """
    from ascend_compat.ecosystem.integrations import _apply as _library_patches

    return _library_patches.apply_once(patches())
