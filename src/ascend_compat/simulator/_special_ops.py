"""Kernels the generic path cannot provide, as a table ``"aten::name[.overload]" -> fn(op, *args, **kwargs)``.

* allocation (``empty.memory_format``, ``empty_strided``): the memory funnel;
* copies (``_copy_from``, ``_copy_from_and_resize``): between host aliases, which covers
  cpu<->npu and npu:i<->npu:j;
* ``resize_``: DLPack storage cannot grow, so growing allocates new device storage and re-points
  the tensor with ``set_`` (pitfall 4);
* ``record_stream``: execution is synchronous, nothing to record;
* ``_efficientzerotensor``: materialised zeros (CPU's ZeroTensor has no memory to alias);
* ``_has_compatible_shallow_copy_type``: True between npu and CPU dense tensors as torch_npu
  registers it, so ``Module.to("npu")`` updates parameters in place (tied weights stay tied);
* ``convolution_overrideable`` / ``convolution_backward_overrideable``: what unknown backends get
  from ``aten::convolution``; mapped back to the CPU convolution ops;
* fused LSTM / GRU cells and their backward: PyTorch routes PrivateUse1 to these CUDA-only
  kernels; reimplemented here with the same math (workspace layouts are private to this module).
"""
from __future__ import annotations

import torch

from ascend_compat.simulator import _memory, _state

aten = torch.ops.aten
_CPU_KS = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)


def _device_index(device) -> int:
    if device is None:
        return _state.current_device()
    index = device.index if isinstance(device, torch.device) else None
    if index is not None and 0 <= index < _state.device_count():
        return index  # the common case, without check_index's parsing
    return _state.check_index(device)


_PLAIN_FORMATS = (None, torch.contiguous_format, torch.preserve_format)


def _empty(op, size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    index = _device_index(device)
    if dtype is None:
        dtype = torch.get_default_dtype()
    if memory_format not in _PLAIN_FORMATS:
        stride = torch.empty(size, device="meta", memory_format=memory_format).stride()
        return _memory.allocate(tuple(size), stride, dtype, index)
    return _memory.allocate(size, None, dtype, index)


def _empty_strided(op, size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    index = _device_index(device)
    if dtype is None:
        dtype = torch.get_default_dtype()
    return _memory.allocate(size, stride, dtype, index)


def _host(t):
    return _memory.host_alias(t) if t.device.type == "npu" else t


def _copy_from(op, self, dst, non_blocking=False):
    _host(dst).copy_(_host(self))
    return dst


def _copy_from_and_resize(op, self, dst):
    if dst.shape != self.shape:
        if dst.device.type == "npu":
            _resize(None, dst, self.shape)
        else:
            dst.resize_(self.shape)
    _host(dst).copy_(_host(self))
    return dst


def _resize(op, self, size, memory_format=None):
    size = tuple(size)
    if memory_format is not None and memory_format not in (torch.contiguous_format, torch.preserve_format):
        stride = torch.empty(size, device="meta", memory_format=memory_format).stride()
    else:
        stride = torch.empty(size, device="meta").stride()
    needed = 0
    if all(s > 0 for s in size):
        needed = (sum((s - 1) * st for s, st in zip(size, stride)) + 1 + self.storage_offset()) * self.element_size()
    storage = self.untyped_storage()
    if needed <= storage.nbytes():
        return aten.set_.source_Storage_storage_offset.redispatch(
            _CPU_KS, self, storage, self.storage_offset(), size, stride)
    # grow: new device storage holding the old bytes, then re-point the tensor at it
    new = _memory.allocate((needed,), None, torch.uint8, self.device.index)
    old = storage.nbytes()
    if old:
        host_new = _memory.host_alias(new)
        whole_old = aten.set_.source_Storage.redispatch(_CPU_KS, _byte_view(self), storage)
        host_old = _memory.host_alias(whole_old)
        host_new[:old].copy_(host_old[:old])
    return aten.set_.source_Storage_storage_offset.redispatch(
        _CPU_KS, self, new.untyped_storage(), self.storage_offset(), size, stride)


def _byte_view(t):
    """A fresh uint8 npu tensor object we can point at ``t``'s storage (no allocation)."""
    return _memory.allocate((0,), None, torch.uint8, t.device.index)


def _efficient_zero_tensor(op, size, dtype=None, layout=None, device=None, pin_memory=None):
    # CPU's ZeroTensor has no data pointer; exported through DLPack it would be read as memory
    # (segfault). A materialised zero tensor is the same value.
    t = _empty(None, size, dtype=dtype, device=device)
    _memory.host_alias(t).zero_()
    return t


def _record_stream(op, self, stream):
    return None


def _has_compatible_shallow_copy_type(op, self, from_):
    def dense(t):
        return t.device.type in ("cpu", "npu") and t.layout == torch.strided
    return (self.device.type == from_.device.type and self.layout == from_.layout) or (dense(self) and dense(from_))


def _conv(op, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    from ascend_compat.simulator._dispatch import call_on_host

    return call_on_host(aten.convolution.default,
                        (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups))


def _conv_backward(op, grad_output, input, weight, stride, padding, dilation, transposed,
                   output_padding, groups, output_mask):
    from ascend_compat.simulator._dispatch import call_on_host

    bias_sizes = [weight.shape[1] * groups] if transposed else [weight.shape[0]]
    res = call_on_host(aten.convolution_backward.default,
                       (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
                        output_padding, groups, output_mask))
    return tuple(res)


# --- fused RNN cells: same math as PyTorch's CUDA kernels, computed on host aliases -----------

def _adopt_all(index, *ts):
    return tuple(None if t is None else _memory.adopt(t.contiguous(), index) for t in ts)


def _lstm_cell(op, input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    index = input_gates.device.index
    gates = _host(input_gates) + _host(hidden_gates)
    if input_bias is not None:
        gates = gates + _host(input_bias) + _host(hidden_bias)
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * _host(cx) + i * g
    hy = o * cy.tanh()
    workspace = torch.cat([i, f, g, o], 1)
    return _adopt_all(index, hy, cy, workspace)


def _lstm_cell_backward(op, grad_hy, grad_cy, cx, cy, workspace, has_bias):
    index = workspace.device.index
    i, f, g, o = _host(workspace).chunk(4, 1)
    cy_h = _host(cy)
    tanh_cy = cy_h.tanh()
    ghy = _host(grad_hy) if grad_hy is not None else torch.zeros_like(cy_h)
    gcy = (_host(grad_cy) if grad_cy is not None else torch.zeros_like(cy_h)) + ghy * o * (1 - tanh_cy * tanh_cy)
    gi = gcy * g * i * (1 - i)
    gf = gcy * _host(cx) * f * (1 - f)
    gg = gcy * i * (1 - g * g)
    go = ghy * tanh_cy * o * (1 - o)
    grad_gates = torch.cat([gi, gf, gg, go], 1)
    grad_cx = gcy * f
    grad_bias = grad_gates.sum(0) if has_bias else None
    return _adopt_all(index, grad_gates, grad_cx, grad_bias)


def _gru_cell(op, input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    index = input_gates.device.index
    ig, hg = _host(input_gates), _host(hidden_gates)
    if input_bias is not None:
        ig = ig + _host(input_bias)
        hg = hg + _host(hidden_bias)
    ir, ii, in_ = ig.chunk(3, 1)
    hr, hi, hn = hg.chunk(3, 1)
    r = (ir + hr).sigmoid()
    z = (ii + hi).sigmoid()
    n = (in_ + r * hn).tanh()
    hx_h = _host(hx)
    hy = n + z * (hx_h - n)
    workspace = torch.cat([r, z, n, hx_h, hn], 1)
    return _adopt_all(index, hy, workspace)


def _gru_cell_backward(op, grad_hy, workspace, has_bias):
    index = workspace.device.index
    r, z, n, hx, hn = _host(workspace).chunk(5, 1)
    gh = _host(grad_hy)
    gz = gh * (hx - n) * z * (1 - z)
    gn = gh * (1 - z) * (1 - n * n)
    gr = gn * hn * r * (1 - r)
    grad_input = torch.cat([gr, gz, gn], 1)
    grad_hidden = torch.cat([gr, gz, gn * r], 1)
    grad_hx = gh * z
    gib = grad_input.sum(0) if has_bias else None
    ghb = grad_hidden.sum(0) if has_bias else None
    return _adopt_all(index, grad_input, grad_hidden, grad_hx, gib, ghb)


TABLE = {
    "aten::empty.memory_format": _empty,
    "aten::empty_strided": _empty_strided,
    "aten::_copy_from": _copy_from,
    "aten::_copy_from_and_resize": _copy_from_and_resize,
    "aten::resize_": _resize,
    "aten::record_stream": _record_stream,
    "aten::_efficientzerotensor": _efficient_zero_tensor,
    "aten::_has_compatible_shallow_copy_type": _has_compatible_shallow_copy_type,
    "aten::convolution_overrideable": _conv,
    "aten::convolution_backward_overrideable": _conv_backward,
    "aten::_thnn_fused_lstm_cell": _lstm_cell,
    "aten::_thnn_fused_lstm_cell_backward_impl": _lstm_cell_backward,
    "aten::_thnn_fused_gru_cell": _gru_cell,
    "aten::_thnn_fused_gru_cell_backward": _gru_cell_backward,
}

#: ops whose composite kernels would shadow the backend fallback: registered directly on PrivateUse1.
DIRECT = ("_has_compatible_shallow_copy_type", "convolution_overrideable", "convolution_backward_overrideable",
          "_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell_backward_impl", "_thnn_fused_gru_cell",
          "_thnn_fused_gru_cell_backward", "record_stream", "_efficientzerotensor")
