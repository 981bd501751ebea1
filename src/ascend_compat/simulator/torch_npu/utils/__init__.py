"""``torch_npu.utils`` of the stand-in: torch_npu 2.14's public names.

- ``get_cann_version`` (the simulated CANN version, as ``torch.npu.utils.get_cann_version``);
- ``npu_combine_tensors(list_of_tensor, require_copy_value=True)``: one contiguous buffer holding the
  tensors, which become views of it (their ``.data`` is rebound); ``get_part_combined_tensor``,
  ``is_combined_tensor_valid`` as in torch_npu;
- ``FlopsCounter`` (also ``torch_npu.utils.flops_count.FlopsCounter``): ``start``/``stop``/``pause``/
  ``resume``/``get_flops() -> [recorded, traversed]`` counting the FLOPs of the matmul/conv/attention ops
  torch's flop counter knows; paused time is traversed but not recorded;
- ``save_async`` (``torch.save``, synchronously), ``set_thread_affinity``/``reset_thread_affinity``
  (accepted, no core binding on the simulator), ``set_asd_loss_scale``/``register_asd_hook`` (silent
  data corruption detection: accepted, nothing to detect on a simulated device).
"""
from __future__ import annotations

from typing import List, Optional

import torch

from ascend_compat.simulator.torch_npu.utils.flops_count import _FlopsCounter as FlopsCounter

__all__ = ["npu_combine_tensors", "get_part_combined_tensor", "is_combined_tensor_valid", "FlopsCounter",
           "set_thread_affinity", "reset_thread_affinity", "save_async", "get_cann_version"]


def get_cann_version(module: str = "CANN") -> str:
    from ascend_compat.simulator.torch_npu.npu.properties import get_cann_version as simulated

    return simulated(module)


def npu_combine_tensors(list_of_tensor: List[torch.Tensor], require_copy_value: bool = True) -> Optional[torch.Tensor]:
    if not list_of_tensor:
        return None
    tensors = [t for t in list_of_tensor if t is not None]
    first = tensors[0]
    total = sum(t.numel() for t in tensors)
    combined = torch.zeros(total, dtype=first.dtype, device=first.device)
    offset = 0
    for t in tensors:
        part = combined[offset:offset + t.numel()].view_as(t)
        if require_copy_value:
            part.copy_(t)
        t.data = part
        offset += t.numel()
    return combined


def get_part_combined_tensor(combined_tensor: torch.Tensor, index: int, size: int) -> torch.Tensor:
    if combined_tensor is None:
        return None
    if index + size > combined_tensor.numel():
        raise RuntimeError(f"index {index} + size {size} exceeds the combined tensor's {combined_tensor.numel()} "
                           "elements")
    return combined_tensor[index:index + size]


def is_combined_tensor_valid(combined_tensor: torch.Tensor, list_of_tensor: List[torch.Tensor]) -> bool:
    if combined_tensor is None or not list_of_tensor:
        return False
    base = combined_tensor.untyped_storage().data_ptr()
    offset = combined_tensor.storage_offset()
    for t in list_of_tensor:
        if t is None:
            continue
        if t.untyped_storage().data_ptr() != base or t.storage_offset() != offset or not t.is_contiguous():
            return False
        offset += t.numel()
    return True


def save_async(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
               _disable_byteorder_record=False, model=None):
    kwargs = {"pickle_protocol": pickle_protocol, "_use_new_zipfile_serialization": _use_new_zipfile_serialization}
    if pickle_module is not None:
        kwargs["pickle_module"] = pickle_module
    torch.save(obj, f, **kwargs)


def set_thread_affinity(cores: Optional[List[int]] = None) -> None:
    if cores is not None and not all(isinstance(c, int) and c >= 0 for c in cores):
        raise ValueError(f"cores must be a list of non-negative ints, got {cores!r}")


def reset_thread_affinity() -> None:
    return None


def set_asd_loss_scale(loss_scale: float = 1.0) -> None:
    if loss_scale <= 0:
        raise ValueError(f"loss_scale must be positive, got {loss_scale}")


def register_asd_hook(x: torch.Tensor, weight: torch.Tensor, hook_module_id: Optional[int] = None,
                      module_name: Optional[str] = None) -> None:
    return None
