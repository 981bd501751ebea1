"""ascend-compat's flash-attn drop-in: flash-attn 2.7.4's Python API on ``torch_npu.npu_fusion_attention``.

Emulated interface: flash-attn **2.7.4** (``flash_attn_interface``, ``bert_padding``, and the rotary
helpers of ``layers.rotary`` / ``ops.triton.rotary`` in :mod:`.rotary`). Import it
directly (``from ascend_compat.ecosystem.dropins.flash_attn import flash_attn_func``) or, while the
ascend-compat shim is active and the real ``flash-attn`` is not installed, as ``flash_attn``
itself (see :mod:`ascend_compat.ecosystem.dropins._finder`); then
``importlib.metadata.version("flash_attn")`` answers :data:`__version__`. Semantics, supported
features and refusals are listed in :mod:`.interface`.
"""
from __future__ import annotations

from ascend_compat.ecosystem.dropins.flash_attn.interface import (
    flash_attn_func,
    flash_attn_kvpacked_func,
    flash_attn_qkvpacked_func,
    flash_attn_varlen_func,
    flash_attn_varlen_kvpacked_func,
    flash_attn_varlen_qkvpacked_func,
    flash_attn_with_kvcache,
)

__version__ = "2.7.4"
EMULATED_VERSION = __version__

__all__ = [
    "__version__",
    "flash_attn_func",
    "flash_attn_kvpacked_func",
    "flash_attn_qkvpacked_func",
    "flash_attn_varlen_func",
    "flash_attn_varlen_kvpacked_func",
    "flash_attn_varlen_qkvpacked_func",
    "flash_attn_with_kvcache",
]
