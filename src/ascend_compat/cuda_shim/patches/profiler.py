"""``torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])`` profiles the NPU.

``ProfilerActivity.CUDA`` (and ``use_cuda=True``, which torch turns into it) becomes the backend's
device activity, ``ProfilerActivity.PrivateUse1`` (shown as ``ProfilerActivity.NPU``), when the
profiler supports it. Without that, CUDA would make Kineto fail on every op, or raise when it is the
only activity. If the profiler has no device activity, CUDA is removed with a one-time warning and
the CPU is profiled. Every other argument, ``experimental_config`` included, is passed through
unchanged (transfer_to_npu drops a non-torch_npu ``experimental_config``; we keep torch's profiler
class, so nothing needs dropping). The enum itself is not changed.
"""
from __future__ import annotations

import warnings
from typing import Any

from ascend_compat.cuda_shim.registry import Patch, hit, make_wrapper

_WARNED: set = set()


def translate_activities(activities: Any) -> Any:
    """``activities`` with CUDA replaced by the device activity (or removed, warned once); the same
    object when it holds no CUDA entry. Dict entries (``{activity: [...]}``) are translated too."""
    import torch.profiler as prof

    cuda = prof.ProfilerActivity.CUDA
    if activities is None:
        return None
    items = list(activities)
    if not any(a is cuda or (isinstance(a, dict) and cuda in a) for a in items):
        return activities
    device = getattr(prof.ProfilerActivity, "PrivateUse1", None)
    if device is None or device not in prof.supported_activities():
        if "no-device" not in _WARNED:
            _WARNED.add("no-device")
            warnings.warn("ascend-compat: this profiler has no NPU activity; ProfilerActivity.CUDA is ignored "
                          "and only the CPU is profiled (use torch_npu.profiler for NPU timelines)",
                          RuntimeWarning, stacklevel=4)
        device = None
    hit("ProfilerActivity.CUDA")
    out: list = []
    for a in items:
        if isinstance(a, dict):
            a = {(device if k is cuda else k): v for k, v in a.items() if not (k is cuda and device is None)}
            if a:
                out.append(a)
        elif a is cuda:
            if device is not None and device not in out:
                out.append(device)
        elif a not in out:
            out.append(a)
    return out


def _kineto_init(original: Any) -> Any:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "activities" in kwargs:
            kwargs["activities"] = translate_activities(kwargs["activities"])
        return original(self, *args, **kwargs)

    return make_wrapper(original, __init__)


def patches() -> list:
    return [
        Patch("torch.profiler.profiler:_KinetoProfile.__init__", _kineto_init,
              "ProfilerActivity.CUDA / use_cuda=True profile the NPU", wrap=True, rebind=False, optional=True, defer=True,
              concept="profiler"),
    ]
