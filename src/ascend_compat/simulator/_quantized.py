"""Quantized npu tensors: torch_npu's QuantizedPrivateUse1 kernels, on host memory.

Contract. With the simulator's C++ part loaded (its PrivateUse1 allocator, see ``_cext``),
:func:`register` registers on ``QuantizedPrivateUse1`` exactly the kernels torch_npu 2.14.0
registers there (its ``npu_native_functions_by_codegen.yaml`` "quant" section, the extra
``q_*``/``qscheme``/``flip`` impls its codegen adds, and ``TensorShape.cpp``'s view, factory and
copy kernels: :data:`KERNELS`), plus its PrivateUse1 ``quantize_per_tensor`` and
``quantize_per_channel``. Every other op on a quantized npu tensor fails as on torch_npu, with
torch's own "Could not run 'aten::x' with arguments from the 'QuantizedPrivateUse1' backend".
Without the C++ part every quantized npu tensor is refused with the reason
(:func:`register_refusal`).

Storage. A quantized npu tensor is a real ``QTensorImpl`` (dispatch key QuantizedPrivateUse1,
device npu) whose storage is ordinary simulator device memory: the int representation, allocated
and accounted through ``_memory.allocate``. DLPack cannot carry a quantized tensor, so the
tensor is made in two steps: torch's own QuantizedCPU factory kernel, redispatched with the npu
device and *zero* elements, builds the ``QTensorImpl`` with its quantizer (its zero-byte storage
comes from the C++ allocator, which refuses any other size), then ``set_`` (QuantizedCPU kernel)
points it at the accounted device storage. Kernels compute on a QuantizedCPU alias of the same
host memory (:func:`host_view`), so values are torch's CPU quantization arithmetic.

Known differences from torch_npu: ``copy_`` between quantized npu tensors with different
quantizers raises (torch_npu gives the destination the source's quantizer; a quantizer cannot be
replaced from Python); supported dtypes are qint8, quint8 and qint32 (the ones torch_npu's
Quantize kernels name).
"""
from __future__ import annotations

import functools

import torch

from ascend_compat.simulator import _memory

_QCPU = torch._C.DispatchKeySet(torch._C.DispatchKey.QuantizedCPU)
_SET_STORAGE = torch.ops.aten.set_.source_Storage_storage_offset
_QDTYPES = (torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4)
_INT = {torch.qint8: torch.int8, torch.quint8: torch.uint8, torch.qint32: torch.int32}
_aten = torch.ops.aten

#: the QuantizedPrivateUse1 kernels of torch_npu 2.14.0 (op overload name -> kernel name here)
KERNELS = (
    "_empty_affine_quantized", "empty.memory_format", "empty_strided", "empty_like",  # factories
    "dequantize.self", "int_repr",  # the "quant" section's compute kernels
    "q_scale", "q_zero_point", "q_per_channel_scales", "q_per_channel_zero_points",
    "q_per_channel_axis", "qscheme", "flip",  # codegen extras
    "view", "as_strided", "ravel", "contiguous", "clone", "_copy_from",  # TensorShape.cpp
)
#: the QuantizedCPU kernels torch_npu registers as themselves (they only read the quantizer)
_QUANTIZER_READERS = ("q_scale", "q_zero_point", "q_per_channel_scales", "q_per_channel_zero_points",
                      "q_per_channel_axis", "qscheme")

NO_CXX_MESSAGE = (
    "quantized tensors on the npu device need the simulated NPU's C++ part, which is not loaded here ({reason}); "
    "torch_npu has them through QuantizedPrivateUse1 kernels. Keep quantized tensors on the CPU, or dequantize() "
    "before moving to npu.")


def _check_dtype(dtype) -> torch.dtype:
    if dtype not in _INT:
        raise RuntimeError(f"quantized npu tensors of dtype {dtype} are not simulated (torch_npu's Quantize "
                           "kernels take torch.qint8, torch.quint8 and torch.qint32)")
    return dtype


# --- making quantized npu tensors -------------------------------------------------------------

def _device_index(device) -> int:
    from ascend_compat.simulator import _state

    device = torch.device(device) if device is not None else torch.device("npu")
    return _state.check_index(device.index if device.index is not None else _state.current_device())


def _blank(quantizer: tuple, dtype, device: torch.device, ndim: int) -> torch.Tensor:
    """Zero-element quantized tensor on ``device`` with ``quantizer`` ``("affine", scale, zp)``,
    ``("channel", scales, zero_points, axis)`` or ``("unknown",)``, made by torch's QuantizedCPU
    factory kernel (on npu its zero-byte storage comes from the C++ allocator, on the device's index)."""
    from ascend_compat.simulator import _state

    size = [0] * ndim
    previous = _state.current_device() if device.type == "npu" else None
    if previous is not None and previous != device.index:
        _state.set_device(device.index)
    try:
        if quantizer[0] == "affine":
            return _aten._empty_affine_quantized.default.redispatch(
                _QCPU, size, dtype=dtype, device=device, scale=quantizer[1], zero_point=quantizer[2])
        if quantizer[0] == "channel":
            return _aten._empty_per_channel_affine_quantized.default.redispatch(
                _QCPU, size, scales=quantizer[1], zero_points=quantizer[2], axis=quantizer[3], dtype=dtype,
                device=device)
        return _aten.empty.memory_format.redispatch(_QCPU, size, dtype=dtype, device=device)
    finally:
        if previous is not None and previous != device.index:
            _state.set_device(previous)


def quantizer_of(q: torch.Tensor) -> tuple:
    """``q``'s quantizer as :func:`_blank` takes it."""
    scheme = q.qscheme()
    if scheme == torch.per_tensor_affine:
        return ("affine", q.q_scale(), q.q_zero_point())
    if scheme == torch.per_channel_affine:
        return ("channel", q.q_per_channel_scales(), q.q_per_channel_zero_points(), q.q_per_channel_axis())
    raise RuntimeError(f"quantized npu tensors with qscheme {scheme} are not simulated")


def _span(size, stride) -> int:
    if any(s == 0 for s in size):
        return 0
    return sum((s - 1) * st for s, st in zip(size, stride)) + 1


def _dense(size, stride) -> bool:
    """True when ``(size, stride)`` covers its memory exactly once (any dimension order)."""
    expected = 1
    for st, sz in sorted((st, sz) for sz, st in zip(size, stride) if sz != 1):
        if st != expected:
            return False
        expected *= sz
    return True


def new(size, stride, dtype, quantizer: tuple, index: int) -> torch.Tensor:
    """New uninitialised quantized npu tensor (accounted device memory of its int representation)."""
    _check_dtype(dtype)
    size = tuple(size)
    stride = tuple(stride) if stride is not None else tuple(torch.empty(size, device="meta").stride())
    q = _blank(quantizer, dtype, torch.device("npu", index), len(size))
    raw = _memory.allocate((_span(size, stride),), None, _INT[dtype], index)
    return _SET_STORAGE.redispatch(_QCPU, q, raw.untyped_storage(), 0, size, stride)


def host_view(q: torch.Tensor) -> torch.Tensor:
    """QuantizedCPU tensor aliasing the memory of quantized npu tensor ``q`` (same geometry and quantizer)."""
    whole = _memory._SET_WHOLE(_memory._CPU_KS, _memory.allocate((0,), None, torch.uint8, q.device.index),
                               q.untyped_storage())
    storage = _memory._retag(whole, _memory.KDL_CPU, 0).untyped_storage()
    blank = _blank(quantizer_of(q), q.dtype, torch.device("cpu"), q.dim())
    return _SET_STORAGE.redispatch(_QCPU, blank, storage, q.storage_offset(), q.shape, q.stride())


def adopt(qc: torch.Tensor, index: int) -> torch.Tensor:
    """Quantized npu copy of the QuantizedCPU tensor ``qc`` on device ``index`` (strides kept when dense)."""
    _check_dtype(qc.dtype)
    stride = qc.stride() if _dense(qc.shape, qc.stride()) else None
    out = new(qc.shape, stride, qc.dtype, quantizer_of(qc), index)
    _int_alias(out).copy_(_aten.int_repr.default.redispatch(_QCPU, qc))
    return out


def _int_alias(q: torch.Tensor) -> torch.Tensor:
    """Plain CPU integer tensor aliasing the int representation of quantized tensor ``q`` (npu or CPU)."""
    if q.device.type == "cpu":
        return torch.empty(0, dtype=_INT[q.dtype]).set_(q.untyped_storage(), q.storage_offset(), q.shape, q.stride())
    whole = _memory._SET_WHOLE(_memory._CPU_KS, _memory.allocate((0,), None, torch.uint8, q.device.index),
                               q.untyped_storage())
    host = _memory._retag(whole, _memory.KDL_CPU, 0)
    return host.view(_INT[q.dtype]).as_strided(q.shape, q.stride(), q.storage_offset())


# --- the kernels ------------------------------------------------------------------------------

def _empty_affine_quantized(size, dtype=None, layout=None, device=None, pin_memory=None, scale=1.0,
                            zero_point=0, memory_format=torch.contiguous_format):
    _check_factory(dtype, layout, pin_memory)
    stride = torch.empty(size, device="meta", memory_format=memory_format or torch.contiguous_format).stride()
    return new(size, stride, dtype, ("affine", scale, zero_point), _device_index(device))


def _empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    _check_factory(dtype, layout, pin_memory)
    stride = torch.empty(size, device="meta", memory_format=memory_format or torch.contiguous_format).stride()
    return new(size, stride, dtype, ("unknown",), _device_index(device))


def _empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    _check_factory(dtype, layout, pin_memory)
    return new(size, stride, dtype, ("unknown",), _device_index(device))


def _check_factory(dtype, layout, pin_memory) -> None:
    # the checks of torch_npu's npu_quantized_empty_* (TensorShape.cpp), in its words
    if pin_memory:
        raise RuntimeError("Quantized tensors do not support pin_memory.")
    if layout not in (None, torch.strided):
        raise RuntimeError(f"Quantized tensors only support strided layout, got {layout}")
    if dtype not in _QDTYPES:
        raise RuntimeError(f"QuantizedPrivateUse1 empty expects a quantized dtype, got {dtype}")
    _check_dtype(dtype)


def _empty_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    # torch_npu's NPUNativeFunctions::empty_like for a quantized self
    if dtype is not None and dtype != self.dtype:
        raise RuntimeError("It is currently not supported to specify a dtype that doesn't match the input tensor's "
                           f"dtype via empty_like.  Specified: {dtype} Input tensor's dtype: {self.dtype}")
    fmt = memory_format or torch.preserve_format
    if fmt == torch.preserve_format:
        fmt = torch.channels_last if (self.dim() == 4 and self.is_contiguous(memory_format=torch.channels_last)
                                      and not self.is_contiguous()) else torch.contiguous_format
    device = device if device is not None else self.device
    scheme = self.qscheme()
    if scheme == torch.per_tensor_affine:
        return torch._empty_affine_quantized(self.shape, scale=self.q_scale(), zero_point=self.q_zero_point(),
                                             dtype=self.dtype, device=device, memory_format=fmt)
    if scheme == torch.per_channel_affine:
        return torch._empty_per_channel_affine_quantized(
            self.shape, scales=self.q_per_channel_scales().clone(), zero_points=self.q_per_channel_zero_points().clone(),
            axis=self.q_per_channel_axis(), dtype=self.dtype, device=device, memory_format=fmt)
    raise RuntimeError(f"Unsupported qscheme: {scheme}")


def _dequantize(self):
    return _memory.adopt(_aten.dequantize.self.redispatch(_QCPU, host_view(self)), self.device.index)


def _int_repr(self):
    return _memory.adopt(_aten.int_repr.default.redispatch(_QCPU, host_view(self)), self.device.index)


def _flip(self, dims):
    return adopt(_aten.flip.default.redispatch(_QCPU, host_view(self), dims), self.device.index)


def _view(self, size):
    # torch_npu's npu_quantized_view_symint: a view when the strides allow one; else, when the
    # result is rank 1 of all elements, a contiguous copy viewed (torch raises there)
    try:
        return _aten.view.default.redispatch(_QCPU, self, size)
    except RuntimeError:
        numel = self.numel()
        if len(size) == 1 and size[0] in (-1, numel):
            return _aten.view.default.redispatch(_QCPU, self.clone(memory_format=torch.contiguous_format), size)
        raise


def _ravel(self):
    return self.contiguous().view(-1)


def _row_major_dense(t) -> bool:
    expected = 1
    for size, stride in reversed(list(zip(t.shape, t.stride()))):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True


def _contiguous(self, memory_format=torch.contiguous_format):
    if memory_format != torch.contiguous_format:
        raise RuntimeError("NPU quantized contiguous supports Contiguous memory format only.")
    if self.is_contiguous() and _row_major_dense(self):
        return self
    return self.clone(memory_format=torch.contiguous_format)


def _clone(self, memory_format=None):
    if memory_format not in (None, torch.contiguous_format, torch.preserve_format):
        raise RuntimeError("NPU quantized clone only supports Contiguous or Preserve memory_format.")
    dst = torch.empty_like(self, memory_format=memory_format or torch.preserve_format)
    _int_alias(dst).copy_(_int_alias(self))
    return dst


def _copy_from(self, dst, non_blocking=False):
    # torch_npu's npu_quantized_copy_from: quantized to quantized copies the int representation
    # (and gives dst self's quantizer, which is only simulated when they already agree)
    if self.is_quantized and dst.is_quantized:
        if self.numel() != dst.numel():
            raise RuntimeError("QuantizedPrivateUse1 _copy_from: numel mismatch.")
        if self.dtype != dst.dtype:
            raise RuntimeError("QuantizedPrivateUse1 _copy_from: quantized dtype mismatch.")
        src_q, dst_q = _quantizer_values(self), _quantizer_values(dst)
        if src_q != dst_q:
            raise NotImplementedError(
                "copy_ between quantized tensors with different quantizers, one of them on npu, is not simulated "
                "(torch_npu gives the destination the source's quantizer); copy between tensors with the same "
                "quantizer, or quantize the dequantized source with the destination's parameters")
        target = _int_alias(dst)
        if target.shape != self.shape:
            target = target.view(self.shape)
        target.copy_(_int_alias(self))
        return dst
    raise RuntimeError("Copying from quantized Tensor to non-quantized Tensor is not allowed, please use dequantize "
                       "to get a float Tensor from a quantized Tensor" if self.is_quantized else
                       "copying a non-quantized tensor into a quantized npu tensor is not simulated")


def _quantizer_values(q) -> tuple:
    kind, *params = quantizer_of(q)
    return (kind, *(p.tolist() if isinstance(p, torch.Tensor) else p for p in params))


def _quantize_per_tensor(self, scale, zero_point, dtype):
    _check_dtype(dtype)
    host = _memory.host_for_read(self)
    return adopt(torch.quantize_per_tensor(host, scale, zero_point, dtype), self.device.index)


def _quantize_per_channel(self, scales, zero_points, axis, dtype):
    _check_dtype(dtype)
    host = _memory.host_for_read(self)
    q = torch.quantize_per_channel(host, scales.cpu(), zero_points.cpu(), axis, dtype)
    return adopt(q, self.device.index)


_PYTHON_KERNELS = {
    "_empty_affine_quantized": _empty_affine_quantized, "empty.memory_format": _empty_memory_format,
    "empty_strided": _empty_strided, "empty_like": _empty_like, "dequantize.self": _dequantize,
    "int_repr": _int_repr, "flip": _flip, "view": _view, "ravel": _ravel, "contiguous": _contiguous,
    "clone": _clone, "_copy_from": _copy_from,
}


def _overload(qualname: str):
    name, _, overload = qualname.partition(".")
    return getattr(getattr(_aten, name), overload or "default")


def unavailable_reason():
    """None when the C++ allocator quantized npu tensors need is registered, else why not."""
    from ascend_compat.simulator import _cext, _guard

    module = _cext.loaded_module()
    if module is not None and _guard.cxx_hooks_active():
        if getattr(module, "device_allocator_active", lambda: False)():
            return None
        return "another PrivateUse1 allocator is registered"
    return _guard.pinned_memory_reason()


def register(lib: torch.library.Library) -> int:
    """Register torch_npu's quantized kernels on ``lib`` (an ``aten`` IMPL library) when the C++
    part is loaded, else the refusal (:func:`register_refusal`); return how many."""
    reason = unavailable_reason()
    if reason is not None:
        return register_refusal(lib, reason)
    _memory.quantized_adopt = adopt
    count = 0
    for qualname in KERNELS:
        op = _overload(qualname)
        if qualname in _QUANTIZER_READERS or qualname == "as_strided":
            kernel = functools.partial(op._handle.redispatch_boxed, _QCPU)
        else:
            kernel = _PYTHON_KERNELS[qualname]
        lib.impl(op, kernel, "QuantizedPrivateUse1")
        count += 1
    lib.impl(_aten.quantize_per_tensor.default, _quantize_per_tensor, "PrivateUse1")
    lib.impl(_aten.quantize_per_channel.default, _quantize_per_channel, "PrivateUse1")
    return count + 2


#: the factories a quantized npu tensor is made by, refused when the C++ part is missing
REFUSED_FACTORIES = ("empty_quantized", "_empty_affine_quantized", "_empty_per_channel_affine_quantized",
                     "empty.memory_format", "empty_strided")


def register_refusal(lib: torch.library.Library, reason: str) -> int:
    """Without the C++ part: register the clear refusal on the quantized npu factories."""
    def refuse(*args, **kwargs):
        raise NotImplementedError(NO_CXX_MESSAGE.format(reason=reason))

    _memory.quantized_adopt = lambda host, index: refuse()

    for qualname in REFUSED_FACTORIES:
        lib.impl(_overload(qualname), refuse, "QuantizedPrivateUse1")
    return len(REFUSED_FACTORIES)
