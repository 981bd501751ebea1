"""Device arguments of torch factory functions and device-typed constructors.

* ``torch.device("cuda...")`` yields the npu device (stand-in class, see ``_device_type``);
* ``torch.Generator``, ``torch.Event``, ``torch.Stream`` translate their device argument;
* every factory in torch's own list of device constructors (``torch.utils._device``), the
  ``*_like`` factories, ``torch.fft.*freq``, ``set_default_device`` and ``get_device_module``
  translate ``device=`` (and a positional device where the API takes one).
"""
from __future__ import annotations

import copyreg
from typing import Any

from ascend_compat.cuda_shim._device_type import make_stand_in, real_device_class
from ascend_compat.cuda_shim.devices import target, translate
from ascend_compat.cuda_shim.patches._common import device_kwarg
from ascend_compat.cuda_shim.registry import Change, Patch, hit

_LIKE = ("empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
         "randint_like", "normal", "frombuffer", "from_file", "asarray", "empty_permuted",
         "sparse_coo_tensor", "_sparse_coo_tensor_unsafe", "_sparse_csr_tensor_unsafe",
         "empty_quantized", "_empty_affine_quantized", "_empty_per_channel_affine_quantized")


class DevicePickling(Change):
    """Make real ``torch.device`` objects pickle through the stand-in (same bytes: ``torch.device``)."""

    name = "copyreg:torch.device"
    reason = "the real class is no longer reachable as torch.device; keep devices picklable"

    def apply(self) -> bool:
        import torch

        self._real = real_device_class(torch)
        self._previous = copyreg.dispatch_table.get(self._real)

        def reduce_device(d: Any) -> tuple:
            cls = torch.device  # the stand-in while active: pickled by name as torch.device
            return (cls, (d.type,) if d.index is None else (d.type, d.index))

        copyreg.pickle(self._real, reduce_device)
        return True

    def revert(self) -> None:
        if self._previous is None:
            copyreg.dispatch_table.pop(self._real, None)
        else:
            copyreg.dispatch_table[self._real] = self._previous


def _device_factory(real: type):
    tgt = target()
    cache: dict = {}  # "cuda:0" -> device(npu:0): devices are immutable values

    def make_device(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and type(args[0]) is str:
            d = cache.get(args[0])
            if d is not None:
                if d[1]:
                    hit("torch.device")
                return d[0]
        d = real(*args, **kwargs)
        translated = d.type == "cuda"
        if translated:
            hit("torch.device")
            d = real(tgt, d.index) if d.index is not None else real(tgt)
        if len(args) == 1 and not kwargs and type(args[0]) is str and len(cache) < 256:
            cache[args[0]] = (d, translated)
        return d

    return make_device


def _translating_factory(real: type, key: str):
    def make(*args: Any, **kwargs: Any) -> Any:
        if args:
            a = args[0]
            n = translate(a, True)
            if n is not a:
                args = (n,) + args[1:]
                hit(key)
        d = kwargs.get("device")
        if d is not None:
            n = translate(d, True)
            if n is not d:
                kwargs["device"] = n
                hit(key)
        return real(*args, **kwargs)

    return make


def patches() -> list:
    import torch
    import torch.utils._device as device_ctx

    # torch's DeviceContext (set_default_device / `with torch.device(...)`) keys on the original
    # factory objects; fill its lru_cache before any of them is wrapped.
    constructors = device_ctx._device_constructors()
    real_device = real_device_class(torch)
    out: list = [
        DevicePickling(),
        Patch("torch:device", make_stand_in(real_device, _device_factory(real_device)),
              "torch.device('cuda') must be an npu device, isinstance unchanged",
              rebind=False, concept="device"),
        Patch("torch:Generator", make_stand_in(torch.Generator, _translating_factory(torch.Generator, "torch.Generator")),
              "torch.Generator(device='cuda')", rebind=False, concept="device"),
    ]
    for cls_name in ("Event", "Stream"):
        real = getattr(torch, cls_name, None)
        if real is not None:
            out.append(Patch(f"torch:{cls_name}", make_stand_in(real, _translating_factory(real, f"torch.{cls_name}")),
                             f"torch.{cls_name}(device='cuda')", rebind=False, concept="device"))
    names = set()
    for fn in constructors:
        mod = {"fft_fftfreq": "torch.fft:fftfreq", "fft_rfftfreq": "torch.fft:rfftfreq",
               "nested_tensor": "torch.nested:nested_tensor"}.get(fn.__name__)
        names.add(mod or f"torch:{fn.__name__}")
    names.update(f"torch:{n}" for n in _LIKE)
    for t in sorted(names):
        out.append(Patch(t, device_kwarg(f"device=: {t.replace(':', '.')}"), "factory device argument",
                         wrap=True, optional=True, concept="factories"))
    out += [
        Patch("torch:set_default_device", device_kwarg("torch.set_default_device", positions=(0,)),
              "set_default_device('cuda')", wrap=True, concept="factories"),
        Patch("torch:get_device_module", device_kwarg("torch.get_device_module", positions=(0,), ints=False),
              "get_device_module('cuda')", wrap=True, optional=True, concept="factories"),
    ]
    return out
