"""CPU references of torch_npu's fused Adam updates (``out=`` in-place forms; DeepSpeed's NPU
FusedAdam calls these). torch_npu 2.14 schemas, formulas from the wheel's ``_op_plugin_docs.py``.

* ``npu_apply_adam_w(beta1_power, beta2_power, lr, weight_decay, beta1, beta2, epsilon, grad,
  max_grad_norm=None, amsgrad=None, maximize=None, *, out=(var, m, v))``: with
  ``g = -grad if maximize else grad``: ``m = b1·m + (1-b1)·g``, ``v = b2·v + (1-b2)·g²``,
  ``v = max(max_grad_norm, v)`` if amsgrad, ``m̂ = m / (1 - beta1_power·b1)``,
  ``v̂ = v / (1 - beta2_power·b2)`` (torch_npu documents ``beta*_power`` as ``beta^(t-1)``),
  ``var = var - lr·m̂/(sqrt(v̂) + eps) - lr·weight_decay·var``.
* ``npu_apply_adam(beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, use_locking,
  use_nesterov, *, out=(var, m, v))``: TensorFlow's ApplyAdam with ``beta*_power = beta^t``:
  ``lr_t = lr·sqrt(1-beta2_power)/(1-beta1_power)``, ``m += (1-b1)(g-m)``, ``v += (1-b2)(g²-v)``,
  ``var -= lr_t·m/(sqrt(v)+eps)`` (nesterov: ``lr_t·(b1·m + (1-b1)·g)/(sqrt(v)+eps)``).

Both update var, m, v in place (computed in float32) and return them.
"""
from __future__ import annotations

import torch

from ascend_compat.simulator.torch_npu.fused._errors import check, check_float_dtype


def _out(op, out, grad):
    check(out is not None and len(out) == 3, f"{op}: pass the tensors to update as out=(var, m, v).")
    var, m, v = out
    for name, t in (("grad", grad), ("var", var), ("m", m), ("v", v)):
        check_float_dtype(op, name, t)
        check(t.shape == var.shape and t.dtype == var.dtype,
              f"{op}: {name} must match var in shape and dtype, got {list(t.shape)} {t.dtype} vs "
              f"{list(var.shape)} {var.dtype}.")
    return var, m, v


def npu_apply_adam_w(beta1_power, beta2_power, lr, weight_decay, beta1, beta2, epsilon, grad, max_grad_norm=None,
                     amsgrad=None, maximize=None, *, out=None):
    """``torch_npu.npu_apply_adam_w(..., out=(var, m, v))``: one AdamW step in place; returns (var, m, v)."""
    op = "npu_apply_adam_w"
    var, m, v = _out(op, out, grad)
    if amsgrad:
        check(max_grad_norm is not None and max_grad_norm.shape == var.shape,
              f"{op}: amsgrad=True needs max_grad_norm with the shape of var.")
    with torch.no_grad():
        g = grad.float()
        if maximize:
            g = -g
        m32 = m.float() * beta1 + (1 - beta1) * g
        v32 = v.float() * beta2 + (1 - beta2) * g * g
        if amsgrad:
            v32 = torch.maximum(max_grad_norm.float(), v32)
        m_hat = m32 / (1 - float(beta1_power) * beta1)
        v_hat = v32 / (1 - float(beta2_power) * beta2)
        w = var.float()
        w = w - lr * m_hat / (v_hat.sqrt() + epsilon) - lr * weight_decay * w
        var.copy_(w)
        m.copy_(m32)
        v.copy_(v32)
    return var, m, v


def npu_apply_adam(beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, use_locking=None,
                   use_nesterov=None, *, out=None):
    """``torch_npu.npu_apply_adam(..., out=(var, m, v))``: TF ApplyAdam step in place; returns (var, m, v)."""
    op = "npu_apply_adam"
    var, m, v = _out(op, out, grad)
    with torch.no_grad():
        g = grad.float()
        lr_t = lr * (1 - float(beta2_power)) ** 0.5 / (1 - float(beta1_power))
        m32 = m.float() + (1 - beta1) * (g - m.float())
        v32 = v.float() + (1 - beta2) * (g * g - v.float())
        step = (beta1 * m32 + (1 - beta1) * g) if use_nesterov else m32
        var.copy_(var.float() - lr_t * step / (v32.sqrt() + epsilon))
        m.copy_(m32)
        v.copy_(v32)
    return var, m, v
