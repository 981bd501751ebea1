"""``torch_npu.distributed`` of the stand-in: the hccl availability probe libraries call.

The simulated ``hccl`` process group itself is registered with ``torch.distributed`` by
:mod:`ascend_compat.simulator._distributed` at install; this module only mirrors torch_npu's names.
"""
from __future__ import annotations

from ascend_compat.simulator._distributed import is_hccl_available

__all__ = ["is_hccl_available"]

