"""Quantized npu tensors: torch_npu's QuantizedPrivateUse1 kernels (storage: ``_quantized``).

Contract. With the simulator's C++ part loaded (its PrivateUse1 allocator, see ``_cext``),
:func:`register` registers on ``QuantizedPrivateUse1`` exactly the kernels the emulated torch_npu
registers there (:func:`kernels`: its op yaml's "quant" section, the quantizer readers its codegen
adds, and, in the release lines whose wheels have them, ``TensorShape.cpp``'s view, factory and
copy kernels and ``flip``), plus its PrivateUse1 ``quantize_per_tensor`` and
``quantize_per_channel``. Every other op on a quantized npu tensor fails as on torch_npu, with
torch's own "Could not run 'aten::x' with arguments from the 'QuantizedPrivateUse1' backend"
(``Tensor.to()`` between the CPU and npu included: torch's ``_to_copy`` needs ``empty_quantized``,
which torch_npu does not register). Without the C++ part every quantized npu tensor is refused
with the reason (:func:`register_refusal`).

Known differences from torch_npu: per-channel scales and zero points live on the npu (torch's
per-channel factory moves them to the tensor's device; torch_npu keeps the caller's); ``copy_``
between quantized tensors with different quantizers raises (torch_npu gives the destination the
source's quantizer, which cannot be replaced from Python); supported dtypes are qint8, quint8 and
qint32 (the ones torch_npu's Quantize kernels name).
"""
from __future__ import annotations

import functools

import torch

from ascend_compat.simulator import _error_code, _memory
from ascend_compat.simulator._quantized import (QCPU, adopt, check_dtype, device_index, host_view, int_alias, new,
                                                quantizer_of)

_aten = torch.ops.aten
_QDTYPES = (torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4)

#: quantizer readers torch_npu's codegen registers on QuantizedPrivateUse1 as torch's QuantizedCPU
#: kernels (``_quantized_extra_impls`` in gen_backend_stubs.py, from torch_npu 2.3 on)
READERS = ("q_scale", "q_zero_point", "q_per_channel_scales", "q_per_channel_zero_points", "q_per_channel_axis",
           "qscheme")
_READERS_SINCE = (2, 3)
#: torch_npu's TensorShape.cpp quantized kernels and its codegen's ``flip``: present in the newest
#: wheel of these release lines only (libtorch_npu.so of 2.7.1.post11, 2.10.0.post7, 2.11.0.post3,
#: 2.12.0.post3, 2.13.0, 2.14.0; absent from 2.6.0.post5, 2.8.0.post5, 2.9.1 and older)
SHAPE_KERNELS = ("view", "as_strided", "ravel", "empty_like", "empty.memory_format", "empty_strided", "contiguous",
                 "clone", "_copy_from", "flip")
_SHAPE_KERNELS_IN = frozenset({(2, 7), (2, 10), (2, 11), (2, 12), (2, 13), (2, 14)})


def kernels(torch_npu_version=None) -> tuple:
    """The QuantizedPrivateUse1 kernels of torch_npu ``torch_npu_version`` (None = newest), sorted:
    its op yaml's "quant" section (``data.quantized_ops``), the codegen's quantizer readers and,
    where its wheel has them, the TensorShape.cpp kernels."""
    from ascend_compat import _versions, data

    key = data.resolve_version(torch_npu_version)
    names = set(data.quantized_ops(key))
    if _versions.minor(key) >= _READERS_SINCE:
        names.update(READERS)
    if _versions.minor(key) in _SHAPE_KERNELS_IN:
        names.update(SHAPE_KERNELS)
    return tuple(sorted(names))


NO_CXX_MESSAGE = (
    "quantized tensors on the npu device need the simulated NPU's C++ part, which is not loaded here ({reason}); "
    "torch_npu has them through QuantizedPrivateUse1 kernels. Keep quantized tensors on the CPU, or dequantize() "
    "before moving to npu.")


# --- the kernels ------------------------------------------------------------------------------

def _empty_affine_quantized(size, dtype=None, layout=None, device=None, pin_memory=None, scale=1.0,
                            zero_point=0, memory_format=torch.contiguous_format):
    _check_factory(dtype, layout, pin_memory)
    stride = torch.empty(size, device="meta", memory_format=memory_format or torch.contiguous_format).stride()
    return new(size, stride, dtype, ("affine", scale, zero_point), device_index(device))


def _empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    _check_factory(dtype, layout, pin_memory)
    stride = torch.empty(size, device="meta", memory_format=memory_format or torch.contiguous_format).stride()
    return new(size, stride, dtype, ("unknown",), device_index(device))


def _empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    _check_factory(dtype, layout, pin_memory)
    return new(size, stride, dtype, ("unknown",), device_index(device))


def _check_factory(dtype, layout, pin_memory) -> None:
    # the checks of torch_npu's npu_quantized_empty_* (TensorShape.cpp), in its words
    if pin_memory:
        raise RuntimeError("Quantized tensors do not support pin_memory.")
    if layout not in (None, torch.strided):
        raise RuntimeError(f"Quantized tensors only support strided layout, got {layout}")
    if dtype not in _QDTYPES:
        raise RuntimeError(f"QuantizedPrivateUse1 empty expects a quantized dtype, got {dtype}")
    check_dtype(dtype)


def _empty_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    # torch_npu's NPUNativeFunctions::empty_like for a quantized self
    if dtype is not None and dtype != self.dtype:
        raise RuntimeError("It is currently not supported to specify a dtype that doesn't match the input tensor's "
                           f"dtype via empty_like.  Specified: {dtype} Input tensor's dtype: {self.dtype}"
                           + _error_code.cpp_error("OPS", "TYPE"))
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
    raise RuntimeError(f"Unsupported qscheme: {scheme}" + _error_code.cpp_error("OPS", "NOT_SUPPORT"))


def _dequantize(self):
    return _memory.adopt(_aten.dequantize.self.redispatch(QCPU, host_view(self)), self.device.index)


def _int_repr(self):
    return _memory.adopt(_aten.int_repr.default.redispatch(QCPU, host_view(self)), self.device.index)


def _flip(self, dims):
    return adopt(_aten.flip.default.redispatch(QCPU, host_view(self), dims), self.device.index)


def _view(self, size):
    # torch_npu's npu_quantized_view_symint: a view when the strides allow one; else, when the
    # result is rank 1 of all elements, a contiguous copy viewed (torch raises there)
    try:
        return _aten.view.default.redispatch(QCPU, self, size)
    except RuntimeError as exc:
        if "view size is not compatible" not in str(exc):
            raise
        if len(size) == 1 and size[0] in (-1, self.numel()):
            return _aten.view.default.redispatch(QCPU, self.clone(memory_format=torch.contiguous_format), size)
        raise RuntimeError(_VIEW_MESSAGE + _error_code.cpp_error("OPS", "PARAM")) from None


_VIEW_MESSAGE = ("view size is not compatible with input tensor's size and stride (at least one dimension spans "
                 "across two contiguous subspaces). Use .reshape(...) instead.")


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
        raise RuntimeError("NPU quantized contiguous supports Contiguous memory format only."
                           + _error_code.cpp_error("OPS", "NOT_SUPPORT"))
    if self.is_contiguous() and _row_major_dense(self):
        return self
    return self.clone(memory_format=torch.contiguous_format)


def _clone(self, memory_format=None):
    if memory_format not in (None, torch.contiguous_format, torch.preserve_format):
        raise RuntimeError("NPU quantized clone only supports Contiguous or Preserve memory_format."
                           + _error_code.cpp_error("OPS", "NOT_SUPPORT"))
    dst = torch.empty_like(self, memory_format=memory_format or torch.preserve_format)
    int_alias(dst).copy_(int_alias(self))
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
        target = int_alias(dst)
        if target.shape != self.shape:
            target = target.view(self.shape)
        target.copy_(int_alias(self))
        return dst
    if self.is_quantized:
        raise RuntimeError("Copying from quantized Tensor to non-quantized Tensor is not allowed, please use "
                           "dequantize to get a float Tensor from a quantized Tensor")
    raise NotImplementedError("copying a non-quantized tensor into a quantized npu tensor is not simulated; "
                              "quantize it (torch.quantize_per_tensor) instead")


def _quantizer_values(q) -> tuple:
    kind, *params = quantizer_of(q)
    return (kind, *(p.tolist() if isinstance(p, torch.Tensor) else p for p in params))


def _quantize_per_tensor(self, scale, zero_point, dtype):
    check_dtype(dtype)
    host = _memory.host_for_read(self)
    return adopt(torch.quantize_per_tensor(host, scale, zero_point, dtype), self.device.index)


def _quantize_per_channel(self, scales, zero_points, axis, dtype):
    check_dtype(dtype)
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
    from ascend_compat.simulator import _state

    # an op torch_npu runs through its CPU fallback moves a quantized CPU result to the device with
    # .to(), which has no QuantizedPrivateUse1 path: the same error torch_npu's fallback gives
    _memory.quantized_adopt = lambda host, index: host.to(torch.device("npu", index))
    count = 0
    for qualname in kernels(_state.config.torch_npu_version if _state.config else None):
        op = _overload(qualname)
        if qualname in READERS or qualname == "as_strided":
            kernel = functools.partial(op._handle.redispatch_boxed, QCPU)
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
