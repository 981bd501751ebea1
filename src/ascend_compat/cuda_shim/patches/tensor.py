"""``torch.Tensor`` and ``torch.nn.Module`` methods that take a device, plus ``.cuda()``/``is_cuda``
and the legacy ``Tensor.type("torch.cuda.FloatTensor")``.

``t.is_cuda`` is True for npu tensors (code gated on it keeps taking its accelerator path);
``t.device`` stays the real ``npu`` device (see the shim's docs for what comparisons see).
"""
from __future__ import annotations

from typing import Any

from ascend_compat.cuda_shim import dtype_manager, policies
from ascend_compat.cuda_shim.devices import target, translate
from ascend_compat.cuda_shim.patches._common import device_kwarg
from ascend_compat.cuda_shim.registry import Patch, hit, make_wrapper
from ascend_compat.knowledge.cuda_names import LEGACY_TENSOR_TYPES

_OFF = dtype_manager.DTypePolicy.OFF



def _translated_to_args(args: tuple, kwargs: dict, what: str, device_cls: type) -> tuple[tuple, dict]:
    """The device and memory-format arguments of a ``to(...)`` call translated; shared by
    ``Tensor.to`` and ``Module.to`` (``what`` names the call in the translation counters)."""
    if args:
        a = args[0]
        t = type(a)
        if t is str or t is device_cls or t is int:
            n = translate(a, True)
            if n is not a:
                args = (n,) + args[1:]
                hit(what)
    if kwargs:
        d = kwargs.get("device")
        if d is not None:
            n = translate(d, True)
            if n is not d:
                kwargs["device"] = n
                hit(what)
        if policies.CHANNELS_LAST and "memory_format" in kwargs:
            kwargs["memory_format"] = policies.keep_contiguous(kwargs["memory_format"])
    return args, kwargs


def _to_wrapper(original, what: str):
    import torch

    from ascend_compat.cuda_shim._device_type import real_device_class

    device_cls = real_device_class(torch)

    def to(self, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = _translated_to_args(args, kwargs, what, device_cls)
        if dtype_manager._POLICY is not _OFF:
            args, kwargs = _dtype_for_to(self, args, kwargs, what)
        return original(self, *args, **kwargs)

    return make_wrapper(original, to)


def _to(original):
    return _to_wrapper(original, "Tensor.to")


def _dtype_for_to(self: Any, args: tuple, kwargs: dict, what: str) -> tuple[tuple, dict]:
    """Apply the float64 policy to a ``to(...)`` call that moves onto the NPU."""
    import torch

    device = kwargs.get("device")
    dtype = kwargs.get("dtype")
    rest = list(args)
    if rest and isinstance(rest[0], (str, torch.device)):
        device = rest[0]
        if len(rest) > 1 and isinstance(rest[1], torch.dtype):
            dtype = rest[1]
    elif rest and isinstance(rest[0], torch.dtype):
        dtype = rest[0]
    on_npu = (device is not None and torch.device(device).type == target()) or (
        device is None and getattr(self, "device", None) is not None and self.device.type == target())
    if not on_npu:
        return args, kwargs
    # where the dtype sits: positional slot (index) or keyword
    slot = None
    if rest and isinstance(rest[0], torch.dtype):
        slot = 0
    elif len(rest) > 1 and (rest[1] is None or isinstance(rest[1], torch.dtype)):
        slot = 1
        dtype = rest[1] if "dtype" not in kwargs else dtype
    if dtype is None and isinstance(self, torch.Tensor) and self.dtype in (torch.float64, torch.complex128):
        dtype = self.dtype
    if dtype is None:
        return args, kwargs
    new = dtype_manager.device_dtype(dtype, what)
    if new is dtype:
        return args, kwargs
    if "dtype" in kwargs or slot is None:
        kwargs = dict(kwargs, dtype=new)
    else:
        rest[slot] = new
    return tuple(rest), kwargs


def _cuda(tensor_to):
    def cuda(self, device: Any = None, non_blocking: bool = False, memory_format: Any = None) -> Any:
        """Move to the NPU (translated ``Tensor.cuda``)."""
        hit("Tensor.cuda")
        dev = target() if device is None else translate(device, True)
        kwargs: dict = {"non_blocking": non_blocking}
        if memory_format is not None:
            kwargs["memory_format"] = policies.keep_contiguous(memory_format) if policies.CHANNELS_LAST else memory_format
        if dtype_manager.active():
            new = dtype_manager.device_dtype(self.dtype, "Tensor.cuda")
            if new is not self.dtype:
                kwargs["dtype"] = new
        return tensor_to(self, dev, **kwargs)

    return cuda


def _is_cuda(original_descriptor):
    get = original_descriptor.__get__
    tgt = target()

    def is_cuda(self) -> bool:
        return self.device.type == tgt or get(self)

    return property(is_cuda, doc="True for npu tensors too (ascend-compat)")


def _type(original):
    def type_(self, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        name = getattr(dtype, "__ascend_compat_legacy__", None) or dtype
        if isinstance(name, str) and name.startswith("torch.cuda."):
            short = name[len("torch.cuda."):]
            if short not in LEGACY_TENSOR_TYPES:
                raise ValueError(f"invalid type: {name!r} (known torch.cuda types: {', '.join(LEGACY_TENSOR_TYPES)})")
            import torch

            hit("Tensor.type")
            dt = dtype_manager.device_dtype(getattr(torch, LEGACY_TENSOR_TYPES[short]), f"Tensor.type({name!r})")
            return self.to(device=target(), dtype=dt, non_blocking=non_blocking)
        if dtype is None:
            return original(self)
        return original(self, dtype, non_blocking, **kwargs)

    return make_wrapper(original, type_)


def _module_to(original):
    return _to_wrapper(original, "Module.to")


def _contiguous(original):
    def contiguous(self, memory_format: Any = None) -> Any:
        if memory_format is None:
            return original(self)
        if policies.CHANNELS_LAST:
            memory_format = policies.keep_contiguous(memory_format)
        return original(self, memory_format=memory_format)

    return make_wrapper(original, contiguous)


def patches() -> list:
    import torch

    tensor_to = torch.Tensor.to
    out = [
        Patch("torch:Tensor.to", _to, "Tensor.to('cuda')", wrap=True, rebind=False, concept="tensor"),
        Patch("torch:Tensor.cuda", _cuda(tensor_to), "Tensor.cuda() moves to the NPU", rebind=False, concept="tensor"),
        Patch("torch:Tensor.is_cuda", _is_cuda(torch._C.TensorBase.__dict__["is_cuda"]),
              "CUDA code gated on is_cuda keeps its accelerator path", rebind=False, concept="tensor"),
        Patch("torch:Tensor.type", _type, "Tensor.type('torch.cuda.FloatTensor')", wrap=True, rebind=False,
              concept="tensor"),
        Patch("torch:Tensor.contiguous", _contiguous, "channels_last policy (opt-in)", wrap=True, rebind=False,
              concept="tensor"),
        Patch("torch.nn:Module.to", _module_to, "Module.to('cuda')", wrap=True, rebind=False, concept="module"),
        Patch("torch.nn:Module.to_empty", device_kwarg("Module.to_empty"), "Module.to_empty(device='cuda')",
              wrap=True, rebind=False, concept="module"),
        Patch("torch.nn.parameter:UninitializedTensorMixin._allowed_methods", None,
              "lazy modules allow the (wrapped) Tensor.to", optional=True, rebind=False, concept="module"),
    ]
    out[-1].wrap = True
    out[-1].replacement = lambda allowed: [torch.Tensor.to if m is tensor_to else m for m in allowed]
    for name in ("new_empty", "new_empty_strided", "new_full", "new_ones", "new_tensor", "new_zeros"):
        out.append(Patch(f"torch:Tensor.{name}", device_kwarg(f"Tensor.{name}"), "device= of new_* methods",
                         wrap=True, rebind=False, concept="tensor"))
    out.append(Patch("torch:Tensor.pin_memory", device_kwarg("Tensor.pin_memory", positions=(1,), ints=False),
                     "pin_memory('cuda')", wrap=True, rebind=False, concept="tensor"))
    return out
