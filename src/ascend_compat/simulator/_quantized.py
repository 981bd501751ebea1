"""Quantized npu tensors on host memory: making them and reading them (the kernels: ``_quantized_ops``).

A quantized npu tensor is a real ``QTensorImpl`` (dispatch key QuantizedPrivateUse1, device npu)
whose storage is ordinary simulator device memory: the int representation, allocated and
accounted through ``_memory.allocate``. DLPack cannot carry a quantized tensor, so :func:`new`
makes it in two steps: torch's own QuantizedCPU factory kernel, redispatched with the npu device
and *zero* elements, builds the ``QTensorImpl`` with its quantizer (its zero-byte storage comes
from the C++ part's PrivateUse1 allocator, which refuses any other size: see ``_cext``), then
``set_`` (QuantizedCPU kernel) points it at the accounted device storage. :func:`host_view` is a
QuantizedCPU alias of the same host memory, so kernels compute with torch's CPU quantization
arithmetic. Quantizers are read with torch's QuantizedCPU kernels (:func:`quantizer_of`), whichever
readers the emulated torch_npu registers.

Interface: ``new``, ``adopt``, ``host_view``, ``int_alias``, ``quantizer_of``, ``check_dtype``,
``device_index``, ``QCPU``.
"""
from __future__ import annotations

import torch

from ascend_compat.simulator import _host, _memory

QCPU = torch._C.DispatchKeySet(torch._C.DispatchKey.QuantizedCPU)
_SET_STORAGE = torch.ops.aten.set_.source_Storage_storage_offset
_INT = {torch.qint8: torch.int8, torch.quint8: torch.uint8, torch.qint32: torch.int32}
_aten = torch.ops.aten
_QSCHEMES = (torch.per_tensor_affine, torch.per_channel_affine, torch.per_tensor_symmetric,
             torch.per_channel_symmetric, torch.per_channel_affine_float_qparams)  # c10::QScheme order


def check_dtype(dtype) -> torch.dtype:
    """``dtype`` when quantized npu tensors of it are simulated, else a clear RuntimeError."""
    if dtype not in _INT:
        raise RuntimeError(f"quantized npu tensors of dtype {dtype} are not simulated (torch_npu's Quantize "
                           "kernels take torch.qint8, torch.quint8 and torch.qint32)")
    return dtype


# --- making quantized npu tensors -------------------------------------------------------------

def device_index(device) -> int:
    """The npu index a factory's ``device`` argument means (None or "npu": the current device)."""
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
                QCPU, size, dtype=dtype, device=device, scale=quantizer[1], zero_point=quantizer[2])
        if quantizer[0] == "channel":
            return _aten._empty_per_channel_affine_quantized.default.redispatch(
                QCPU, size, scales=quantizer[1], zero_points=quantizer[2], axis=quantizer[3], dtype=dtype,
                device=device)
        return _aten.empty.memory_format.redispatch(QCPU, size, dtype=dtype, device=device)
    finally:
        if previous is not None and previous != device.index:
            _state.set_device(previous)


def quantizer_of(q: torch.Tensor) -> tuple:
    """``q``'s quantizer as :func:`_blank` takes it (read by the QuantizedCPU kernels, whichever
    readers the emulated torch_npu registers)."""
    scheme = _QSCHEMES[_aten.qscheme.default.redispatch(QCPU, q)]
    if scheme == torch.per_tensor_affine:
        return ("affine", _aten.q_scale.default.redispatch(QCPU, q), _aten.q_zero_point.default.redispatch(QCPU, q))
    if scheme == torch.per_channel_affine:
        return ("channel", _aten.q_per_channel_scales.default.redispatch(QCPU, q),
                _aten.q_per_channel_zero_points.default.redispatch(QCPU, q),
                _aten.q_per_channel_axis.default.redispatch(QCPU, q))
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
    check_dtype(dtype)
    size = tuple(size)
    stride = tuple(stride) if stride is not None else tuple(torch.empty(size, device="meta").stride())
    q = _blank(quantizer, dtype, torch.device("npu", index), len(size))
    raw = _memory.allocate((_span(size, stride),), None, _INT[dtype], index)
    return _SET_STORAGE.redispatch(QCPU, q, raw.untyped_storage(), 0, size, stride)


def host_view(q: torch.Tensor) -> torch.Tensor:
    """QuantizedCPU tensor aliasing the memory of quantized npu tensor ``q`` (same geometry and quantizer)."""
    storage = _memory.host_storage(q)
    blank = _blank(quantizer_of(q), q.dtype, torch.device("cpu"), q.dim())
    return _SET_STORAGE.redispatch(QCPU, blank, storage, q.storage_offset(), q.shape, q.stride())


def adopt(qc: torch.Tensor, index: int) -> torch.Tensor:
    """Quantized npu copy of the QuantizedCPU tensor ``qc`` on device ``index`` (strides kept when dense)."""
    check_dtype(qc.dtype)
    stride = qc.stride() if _dense(qc.shape, qc.stride()) else None
    out = new(qc.shape, stride, qc.dtype, quantizer_of(qc), index)
    int_alias(out).copy_(_aten.int_repr.default.redispatch(QCPU, qc))
    return out


def int_alias(q: torch.Tensor) -> torch.Tensor:
    """Plain CPU integer tensor aliasing the int representation of quantized tensor ``q`` (npu or CPU)."""
    storage = q.untyped_storage() if q.device.type == "cpu" else _memory.host_storage(q)
    return _host.empty(0, dtype=_INT[q.dtype]).set_(storage, q.storage_offset(), q.shape, q.stride())
