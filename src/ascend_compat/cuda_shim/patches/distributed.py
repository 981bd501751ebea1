"""``nccl`` -> ``hccl`` and device arguments in ``torch.distributed`` and the parallel wrappers.

Backend names: ``init_process_group``/``new_group``/``split_group``/``_new_group_with_tag`` take
``"nccl"``, ``"cuda:nccl"``, ``"cpu:gloo,cuda:nccl"`` and get ``hccl`` / ``npu:hccl``.

Comparisons: ``dist.get_backend()`` returns :class:`HcclBackendName`, a ``str`` equal to ``"hccl"``
*and* to ``"nccl"`` (so ``if dist.get_backend() == "nccl":`` and ``== dist.Backend.NCCL`` keep
working; its ``str()``/``repr`` say ``hccl`` honestly). ``is_nccl_available()`` reports hccl.
"""
from __future__ import annotations

import importlib
import sys
from typing import Any

from ascend_compat.cuda_shim.devices import translate, translate_backend
from ascend_compat.cuda_shim.registry import Change, Patch, hit, make_wrapper


class HcclBackendName(str):
    """A backend name that also compares equal to its CUDA spelling (``nccl``, ``cuda:nccl``)."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            s = str.__str__(self)
            return s == str.__str__(other) or s == translate_backend(str.__str__(other).lower())
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = str.__hash__

    def __repr__(self) -> str:
        return repr(str.__str__(self))


def _backend_arg(key: str, position: int):
    def make(original):
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if len(args) > position:
                b = args[position]
                n = translate_backend(b)
                if n is not b:
                    args = args[:position] + (n,) + args[position + 1:]
                    hit(key, f"{b} -> {n}")
            b = kwargs.get("backend")
            if b is not None:
                n = translate_backend(b)
                if n is not b:
                    kwargs["backend"] = n
                    hit(key, f"{b} -> {n}")
            d = kwargs.get("device_id")
            if d is not None:
                n = translate(d, True)
                if n is not d:
                    kwargs["device_id"] = n if not isinstance(n, str) else _real_device(n)
                    hit(key, "device_id")
            return original(*args, **kwargs)

        return make_wrapper(original, wrapper)

    return make


def _real_device(text: str) -> Any:
    import torch

    from ascend_compat.cuda_shim._device_type import real_device_class

    return real_device_class(torch)(text)


def _get_backend(original):
    def get_backend(*args: Any, **kwargs: Any) -> Any:
        name = original(*args, **kwargs)
        if isinstance(name, str) and "hccl" in name:
            return HcclBackendName(name)
        return name

    return make_wrapper(original, get_backend)


def _is_nccl_available(original):
    def is_nccl_available() -> bool:
        import torch.distributed as dist

        try:
            return bool(dist.is_backend_available("hccl"))
        except Exception:
            return False

    return make_wrapper(original, is_nccl_available)


def _device_ids_init(key: str, names: tuple[str, ...], device_type_pos: int | None = None):
    def make(original):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if device_type_pos is not None and len(args) > device_type_pos:
                a = args[device_type_pos]
                n = translate(a)
                if n is not a:
                    args = args[:device_type_pos] + (n,) + args[device_type_pos + 1:]
                    hit(key)
            for name in names:
                v = kwargs.get(name)
                if v is not None:
                    n = translate(v)
                    if n is not v:
                        kwargs[name] = n
                        hit(key, name)
            return original(self, *args, **kwargs)

        return make_wrapper(original, __init__)

    return make


def _ddp_init(original):
    def __init__(self, module: Any, device_ids: Any = None, output_device: Any = None, *args: Any,
                 **kwargs: Any) -> None:
        n = translate(device_ids)
        if n is not device_ids:
            hit("DistributedDataParallel(device_ids=cuda)")
        m = translate(output_device)
        return original(self, module, n, m, *args, **kwargs)

    return make_wrapper(original, __init__)


def _device_type_fn(key: str):
    def make(original):
        def fn(device_type: Any, *args: Any, **kwargs: Any) -> Any:
            n = translate(device_type)
            if n is not device_type:
                hit(key)
            return original(n, *args, **kwargs)

        return make_wrapper(original, fn)

    return make


class DictEntry(Change):
    """Remove (or set) one key of a dict while active; restore it exactly on revert."""

    _ABSENT = object()

    def __init__(self, name: str, get_dict: Any, key: Any, value: Any = _ABSENT, reason: str = "") -> None:
        self.name, self._get, self._key, self._value, self.reason = name, get_dict, key, value, reason

    def apply(self) -> bool:
        d = self._get()
        if d is None:
            return False
        self._dict = d
        self._before = d.get(self._key, self._ABSENT)
        if self._value is self._ABSENT:
            d.pop(self._key, None)
        else:
            d[self._key] = self._value
        return True

    def revert(self) -> None:
        if self._before is self._ABSENT:
            self._dict.pop(self._key, None)
        else:
            self._dict[self._key] = self._before


def _default_backend_map() -> Any:
    import torch.distributed as dist

    if not dist.is_available():
        return None
    return getattr(dist.Backend, "default_device_backend_map", None)


def patches() -> list:
    import torch.distributed as dist

    if not dist.is_available():
        return []
    c10d = "torch.distributed.distributed_c10d"
    out: list = [
        Patch(f"{c10d}:init_process_group", _backend_arg("init_process_group(backend=nccl)", 0),
              "nccl -> hccl", wrap=True, concept="distributed"),
        Patch(f"{c10d}:new_group", _backend_arg("new_group(backend=nccl)", 2), "nccl -> hccl", wrap=True,
              concept="distributed"),
        Patch(f"{c10d}:_new_group_with_tag", _backend_arg("new_group(backend=nccl)", 2), "nccl -> hccl",
              wrap=True, optional=True, concept="distributed"),
        Patch(f"{c10d}:split_group", _backend_arg("split_group(backend=nccl)", 5), "nccl -> hccl", wrap=True,
              optional=True, concept="distributed"),
        Patch(f"{c10d}:get_backend", _get_backend, "get_backend() == 'nccl' keeps working", wrap=True,
              concept="distributed"),
        Patch(f"{c10d}:is_nccl_available", _is_nccl_available, "is_nccl_available() reports hccl", wrap=True,
              concept="distributed"),
        DictEntry("Backend.default_device_backend_map['cuda']", _default_backend_map, "cuda",
                  reason="no NCCL: the default backend for cuda tensors must not be nccl"),
        Patch("torch.nn.parallel.distributed:DistributedDataParallel.__init__", _ddp_init,
              "DDP device_ids/output_device", wrap=True, rebind=False, concept="distributed"),
        Patch("torch.nn.parallel.data_parallel:DataParallel.__init__",
              _device_ids_init("DataParallel(device_ids=cuda)", ("device_ids", "output_device")),
              "DataParallel device_ids/output_device", wrap=True, rebind=False, concept="distributed"),
        Patch("torch.distributed.device_mesh:DeviceMesh.__init__",
              _device_ids_init("DeviceMesh('cuda')", ("device_type",), device_type_pos=0),
              "DeviceMesh('cuda')", wrap=True, rebind=False, optional=True, concept="distributed"),
        Patch("torch.distributed.device_mesh:init_device_mesh", _device_type_fn("init_device_mesh('cuda')"),
              "init_device_mesh('cuda')", wrap=True, optional=True, concept="distributed"),
        Patch("torch.distributed.fsdp.fully_sharded_data_parallel:FullyShardedDataParallel.__init__",
              _device_ids_init("FSDP(device_id=cuda)", ("device_id",)), "FSDP device_id", wrap=True,
              rebind=False, optional=True, defer=True, concept="distributed"),
    ]
    npu_mod = _torch_npu()
    hccl_pg = None
    if npu_mod is not None:
        try:
            c = importlib.import_module("torch_npu._C._distributed_c10d")
        except ImportError:
            c = None
        hccl_pg = getattr(c, "ProcessGroupHCCL", None)
    if hccl_pg is not None:
        for where in ("torch.distributed", c10d):
            out.append(Patch(f"{where}:ProcessGroupNCCL", hccl_pg, "ProcessGroupNCCL -> ProcessGroupHCCL",
                             rebind=False, concept="distributed"))
    return out


def _torch_npu():
    """The backend's ``torch_npu`` module (imported if needed: the shim only runs with a backend present)."""
    module = sys.modules.get("torch_npu")
    if module is not None:
        return module
    try:
        import torch_npu  # the simulator's stand-in, or real torch_npu already loaded as the backend
    except Exception:  # noqa: BLE001 - no usable torch_npu: no ProcessGroupNCCL alias
        return None
    return torch_npu
