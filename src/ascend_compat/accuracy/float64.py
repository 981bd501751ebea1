"""float64 segments: what torch_npu computes in float32 where the script asked for float64, followed on
the host in float64 and judged where the value comes back.

torch_npu turns a dtype-only cast to float64 of an NPU tensor (``x.double()``, ``x.to(torch.float64)``)
into float32 (``docs/float64.md``), and everything computed from it stays float32 where CUDA would have
computed in float64. Judging each of those ops against its own float32 inputs finds nothing; judging the
downcast itself against float64 finds a difference every time, including where it does no harm
(GradScaler's ``self._scale.double().reciprocal().float()``). So the comparison follows the segment:

* a downcast starts it: the NPU tensor gets a **shadow**, the host's float64 value (:meth:`Segments.start`);
* an op with a shadowed input runs again on the host with the shadows; a float64 result for a float32
  NPU tensor carries the segment on (:meth:`Segments.carry`);
* where the value comes back - an op whose host result is float32 or narrower (``.to(torch.bfloat16)``,
  a comparison), a ``.float()`` / ``.to(x.dtype)`` that the NPU need not run because the tensor is
  float32 already, or a copy to the host / ``.item()`` - the NPU's value is judged against the float64
  segment's, rounded as CUDA would round it, by the accuracy standard (the caller does that).

Shadows are host tensors held by weak reference to their NPU tensor (gone with it); their total size
is bounded (``max_bytes``), beyond which new segments are not followed and are counted instead.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

__all__ = ["Segments", "Shadow", "DEFAULT_MAX_BYTES"]

DEFAULT_MAX_BYTES = 256 * 2 ** 20


class Shadow:
    """The float64 value of one NPU tensor and where its segment started (``start``: a user frame,
    ``library``: the library frame of the downcast when a library made it, else None)."""

    __slots__ = ("value", "start", "library", "__weakref__")

    def __init__(self, value, start, library) -> None:
        self.value, self.start, self.library = value, start, library


class Segments:
    """The shadows of one comparison (see the module docstring)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        from torch.utils.weak import WeakIdKeyDictionary

        self.max_bytes = max_bytes
        self._shadows: Any = WeakIdKeyDictionary()
        self._bytes = 0
        self.not_followed = 0  # segments dropped because the shadows' size bound was reached

    def __len__(self) -> int:
        return len(self._shadows)

    def get(self, tensor) -> Optional[Shadow]:
        return self._shadows.get(tensor)

    def shadowed(self, flat) -> Dict[int, Shadow]:
        """``{flat position: shadow}`` of the shadowed tensors in ``flat`` (a flattened argument list)."""
        if not self._shadows:
            return {}
        import torch

        found = {}
        for i, x in enumerate(flat):
            if isinstance(x, torch.Tensor):
                s = self._shadows.get(x)
                if s is not None:
                    found[i] = s
        return found

    def _put(self, tensor, value, start, library) -> bool:
        size = value.numel() * value.element_size()
        old = self._shadows.get(tensor)
        if old is not None:
            self._bytes -= old.value.numel() * old.value.element_size()
        if self._bytes + size > self.max_bytes:
            self._shadows.pop(tensor, None)
            self.not_followed += 1
            return False
        self._shadows[tensor] = Shadow(value, start, library)
        self._bytes += size
        return True

    def start(self, tensor, value, start, library=None) -> bool:
        """A downcast: NPU ``tensor`` holds in float32 what ``value`` (host, float64) holds. False when the
        size bound stops it."""
        return self._put(tensor, value, start, library)

    def carry(self, tensor, value, shadow: Shadow) -> bool:
        """``tensor`` was computed from shadowed inputs (``shadow``: the first of them); ``value`` is its
        float64 host result."""
        return self._put(tensor, value, shadow.start, shadow.library)

    def drop(self, tensor) -> Optional[Shadow]:
        s = self._shadows.pop(tensor, None)
        if s is not None:
            self._bytes -= s.value.numel() * s.value.element_size()
        return s

    @staticmethod
    def wider(npu, host) -> bool:
        """``host`` (a host result) has more floating bits than ``npu`` (the NPU's): a downcast."""
        import torch

        if not (isinstance(npu, torch.Tensor) and isinstance(host, torch.Tensor)):
            return False
        if not (npu.is_floating_point() and host.is_floating_point()):
            return False
        return torch.finfo(host.dtype).bits > torch.finfo(npu.dtype).bits


def returned_value(npu, host) -> Tuple[Any, Any]:
    """``(npu, golden)`` as host float64 tensors for a value that leaves a segment (a tensor or a Python
    number from ``.item()``)."""
    import torch

    def as_tensor(x):
        return x.detach().to("cpu") if isinstance(x, torch.Tensor) else torch.tensor(x)

    return as_tensor(npu), as_tensor(host)
