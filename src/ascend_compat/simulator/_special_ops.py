"""Kernels the generic path cannot provide, as a table ``"aten::name[.overload]" -> fn(op, *args, **kwargs)``.

* allocation (``empty.memory_format``, ``empty_strided``): the memory funnel;
* copies (``copy_``, ``_copy_from``, ``_copy_from_and_resize``): between host aliases (lazy
  conjugate/negative bits kept), which covers cpu<->npu and npu:i<->npu:j;
* ``resize_``: DLPack storage cannot grow, so growing allocates new device storage and re-points
  the tensor with ``set_`` (docs/simulator_pitfalls.md, pitfall 4);
* ``record_stream``: execution is synchronous, nothing to record;
* ``_efficientzerotensor``: materialised zeros (CPU's ZeroTensor has no memory to alias);
* ``_has_compatible_shallow_copy_type``: True between npu and CPU dense tensors as torch_npu
  registers it, so ``Module.to("npu")`` updates parameters in place (tied weights stay tied);
* ``convolution_overrideable`` / ``convolution_backward_overrideable``: what unknown backends get
  from ``aten::convolution``; mapped back to the CPU convolution ops;
* fused LSTM / GRU cells and their backward: PyTorch routes PrivateUse1 to these CUDA-only
  kernels; reimplemented here with the same math (workspace layouts are private to this module);
* the SyncBatchNorm kernels (``batch_norm_stats``, ``batch_norm_gather_stats[_with_counts]``,
  ``batch_norm_elemt``, ``batch_norm_backward_reduce``, ``batch_norm_backward_elemt``): CUDA-only
  in PyTorch, native in torch_npu; the CUDA kernels' math (Welford-equivalent merge, unbiased
  running variance, statistics in float32 for half inputs).
"""
from __future__ import annotations

import torch

from ascend_compat.simulator import _dispatch, _memory, _plan, _state

aten = torch.ops.aten
_CPU_KS = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)


_current_device = _state.current_device


def _device_index(device) -> int:
    if device is None:
        return _current_device()
    if device.__class__ is torch.device:
        index = device.index
        if index is None:
            return _current_device()  # "npu": the current device, without check_index's parsing
        if 0 <= index < _state.visible_device_count():
            return index
    return _state.check_index(device)


_PLAIN_FORMATS = (None, torch.contiguous_format, torch.preserve_format)


def _refuse_pinned(pin_memory):
    if pin_memory:
        # CUDA's and torch_npu's wording; pinning is a property of host memory
        raise RuntimeError(
            "Only dense CPU tensors can be pinned. pin_memory=True asks for page-locked *host* memory: "
            "create the tensor on the CPU with pin_memory=True and move it with .to('npu', non_blocking=True), "
            "or drop pin_memory for tensors created on npu.")


def _empty(op, size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    if pin_memory:
        _refuse_pinned(pin_memory)
    index = _device_index(device)
    if dtype is None:
        dtype = torch.get_default_dtype()
    if memory_format not in _PLAIN_FORMATS:
        stride = torch.empty(size, device="meta", memory_format=memory_format).stride()
        return _memory.allocate(tuple(size), stride, dtype, index)
    return _memory.allocate(size, None, dtype, index)


def _empty_strided(op, size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    if pin_memory:
        _refuse_pinned(pin_memory)
    index = _device_index(device)
    if dtype is None:
        dtype = torch.get_default_dtype()
    return _memory.allocate(size, stride, dtype, index)


def _host(t):
    return _memory.host_alias(t) if t.device.type == "npu" else t


def _copy_(op, self, src, non_blocking=False):
    # Registered for copy_ itself (as torch_npu does): copy_ is a fallthrough for the
    # Conjugate/Negative keys, so a lazily conjugated/negated destination arrives intact and the
    # host alias carries the bit. Through _copy_from (whose dst is not annotated as written) the
    # math-bits fallback would hand us a resolved clone of the destination and drop the write.
    if self.is_meta or src.is_meta:
        return aten.copy_.default.redispatch(torch._C.DispatchKeySet(torch._C.DispatchKey.Meta), self, src,
                                             non_blocking)
    _host(self).copy_(_host(src))
    return self


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
    return _memory.restride(self, size, stride, self.storage_offset())


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
    call_on_host = _dispatch.call_on_host

    return call_on_host(aten.convolution.default,
                        (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups))


def _conv_backward(op, grad_output, input, weight, stride, padding, dilation, transposed,
                   output_padding, groups, output_mask):
    call_on_host = _dispatch.call_on_host

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


# --- SyncBatchNorm kernels: PyTorch routes PrivateUse1 to these CUDA kernels (torch_npu has them
# natively); same math as the CUDA ones, computed on host aliases. Statistics are kept in the
# accumulation dtype (float32 for float16/bfloat16 input), outputs in the input dtype.

def _bn_index(*ts) -> int:
    index = None
    for t in ts:
        if t is None:
            continue
        if t.device.type != "npu":
            if t.dim() == 0:
                continue
            mixed_device_error = _dispatch.mixed_device_error

            raise mixed_device_error(f"npu:{index if index is not None else t.get_device()}", t.device)
        if index is None:
            index = t.device.index
        elif t.device.index != index:
            mixed_device_error = _dispatch.mixed_device_error

            raise mixed_device_error(f"npu:{index}", f"npu:{t.device.index}")
    return _state.current_device() if index is None else index


def _acc_dtype(dtype):
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _channel_view(v, dim):
    """Per-channel vector ``v`` shaped to broadcast against a ``dim``-d NC... tensor."""
    return v.reshape((1, -1) + (1,) * (dim - 2))


def _reduce_dims(t):
    return [d for d in range(t.dim()) if d != 1]


def _batch_norm_stats(op, input, eps):
    index = _bn_index(input)
    x = _host(input).to(_acc_dtype(input.dtype))
    dims = _reduce_dims(x)
    var, mean = torch.var_mean(x, dim=dims, correction=0)
    return _adopt_all(index, mean, (var + eps).rsqrt())


def _batch_norm_gather_stats_with_counts(op, input, mean, invstd, running_mean, running_var, momentum, eps,
                                         counts):
    index = _bn_index(input, mean, invstd, running_mean, running_var, counts)
    m, inv = _host(mean), _host(invstd)
    acc = m.dtype
    n = _host(counts).to(acc).reshape(-1, 1)
    total = n.sum(0)
    avg = (n * m).sum(0) / total
    # per-replica biased variance recovered from invstd, combined with the spread of the means
    var_n = (n * ((1.0 / inv) ** 2 - eps)).sum(0) + (n * (m - avg) ** 2).sum(0)
    new_invstd = (var_n / total + eps).rsqrt()
    if running_mean is not None:
        rm = _memory.host_alias(running_mean)
        rm.copy_((1 - momentum) * rm + momentum * avg)
    if running_var is not None:
        rv = _memory.host_alias(running_var)
        rv.copy_((1 - momentum) * rv + momentum * (var_n / (total - 1)))
    return _adopt_all(index, avg.to(mean.dtype), new_invstd.to(invstd.dtype))


def _batch_norm_elemt(op, input, weight, bias, mean, invstd, eps):
    index = _bn_index(input, weight, bias, mean, invstd)
    x = _host(input)
    d = x.dim()
    acc = _acc_dtype(x.dtype)
    y = (x.to(acc) - _channel_view(_host(mean).to(acc), d)) * _channel_view(_host(invstd).to(acc), d)
    if weight is not None:
        y = y * _channel_view(_host(weight).to(acc), d)
    if bias is not None:
        y = y + _channel_view(_host(bias).to(acc), d)
    return _memory.adopt(y.to(x.dtype).contiguous(memory_format=_memory_format(x)), index)


def _batch_norm_elemt_out(op, input, weight, bias, mean, invstd, eps, *, out):
    y = _batch_norm_elemt(None, input, weight, bias, mean, invstd, eps)
    _bn_index(out, y)
    if out.shape != y.shape:
        _resize(None, out, y.shape)
    _memory.host_alias(out).copy_(_memory.host_alias(y))
    return out


def _batch_norm_gather_stats(op, input, mean, invstd, running_mean, running_var, momentum, eps, count):
    counts = _empty(None, (mean.shape[0],), dtype=mean.dtype, device=mean.device)
    _memory.host_alias(counts).fill_(count)
    return _batch_norm_gather_stats_with_counts(None, input, mean, invstd, running_mean, running_var, momentum,
                                                eps, counts)


def _memory_format(x):
    """The layout CUDA's batch-norm kernels give their outputs (``suggest_memory_format``)."""
    if x.dim() == 4 and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last):
        return torch.channels_last
    if x.dim() == 5 and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last_3d):
        return torch.channels_last_3d
    return torch.contiguous_format


def _batch_norm_backward_reduce(op, grad_out, input, mean, invstd, weight, input_g, weight_g, bias_g):
    index = _bn_index(grad_out, input, mean, invstd, weight)
    x, dy = _host(input), _host(grad_out)
    acc = _acc_dtype(x.dtype)
    d = x.dim()
    dims = _reduce_dims(x)
    dy_acc = dy.to(acc)
    sum_dy = dy_acc.sum(dims)
    sum_dy_xmu = (dy_acc * (x.to(acc) - _channel_view(_host(mean).to(acc), d))).sum(dims)
    wdtype = weight.dtype if weight is not None else x.dtype
    grad_weight = (sum_dy_xmu * _host(invstd).to(acc)).to(wdtype) if weight_g else None
    grad_bias = sum_dy.to(wdtype) if bias_g else None
    if not input_g:
        sum_dy = sum_dy_xmu = None
    else:
        sum_dy, sum_dy_xmu = sum_dy.to(mean.dtype), sum_dy_xmu.to(mean.dtype)
    return _adopt_all(index, sum_dy, sum_dy_xmu, grad_weight, grad_bias)


def _batch_norm_backward_elemt(op, grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count):
    index = _bn_index(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count)
    x, dy = _host(input), _host(grad_out)
    acc = _acc_dtype(x.dtype)
    d = x.dim()
    norm = 1.0 / _host(count).to(acc).sum()
    inv = _host(invstd).to(acc)
    grad_mean = _channel_view(_host(sum_dy).to(acc) * norm, d)
    proj = _channel_view(_host(sum_dy_xmu).to(acc) * norm * inv * inv, d)
    scale = inv * _host(weight).to(acc) if weight is not None else inv
    mu = _channel_view(_host(mean).to(acc), d)
    gx = (dy.to(acc) - grad_mean - (x.to(acc) - mu) * proj) * _channel_view(scale, d)
    return _memory.adopt(gx.to(x.dtype).contiguous(memory_format=_memory_format(x)), index)


TABLE = {
    "aten::empty.memory_format": _empty,
    "aten::empty_strided": _empty_strided,
    "aten::copy_": _copy_,
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
    "aten::batch_norm_stats": _batch_norm_stats,
    "aten::batch_norm_gather_stats_with_counts": _batch_norm_gather_stats_with_counts,
    "aten::batch_norm_elemt": _batch_norm_elemt,
    "aten::batch_norm_elemt.out": _batch_norm_elemt_out,
    "aten::batch_norm_gather_stats": _batch_norm_gather_stats,
    "aten::batch_norm_backward_reduce": _batch_norm_backward_reduce,
    "aten::batch_norm_backward_elemt": _batch_norm_backward_elemt,
}
_plan.register_special(TABLE)

#: allocation kernels registered on PrivateUse1 as themselves (no plan, no boxed fallback: the
#: allocation path costs about one small op; torch_npu registers both natively)
DIRECT_ALLOCATION = {"empty.memory_format": _empty, "empty_strided": _empty_strided}

#: ops whose composite kernels would shadow the backend fallback: registered directly on PrivateUse1.
DIRECT = ("copy_", "_has_compatible_shallow_copy_type", "convolution_overrideable", "convolution_backward_overrideable",
          "_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell_backward_impl", "_thnn_fused_gru_cell",
          "_thnn_fused_gru_cell_backward", "record_stream", "_efficientzerotensor")
