"""``apex.optimizers`` with apex's constructor signatures and update rules, in plain torch.

* ``FusedAdam(params, lr=1e-3, bias_correction=True, betas=(0.9, 0.999), eps=1e-8,
  adam_w_mode=True, weight_decay=0.0, amsgrad=False, set_grad_none=True)``: Adam with decoupled
  weight decay (``adam_w_mode``) or L2 decay added to the gradient; ``bias_correction=False``
  skips the ``1 - beta^t`` factors. ``amsgrad=True`` raises like apex.
* ``FusedLAMB(params, lr=1e-3, bias_correction=True, betas=(0.9, 0.999), eps=1e-6,
  weight_decay=0.01, amsgrad=False, adam_w_mode=True, grad_averaging=True, set_grad_none=True,
  max_grad_norm=1.0, use_nvlamb=False)``: apex's LAMB: gradients divided by
  ``global_norm / max_grad_norm`` when the global gradient norm exceeds ``max_grad_norm``;
  ``m = b1·m + (1 - b1 if grad_averaging else 1)·g``, ``v = b2·v + (1 - b2)·g²``;
  ``u = m̂ / (sqrt(v̂) + eps) (+ wd·p in adam_w_mode; L2 mode adds wd·p to g first)``;
  trust ratio ``‖p‖ / ‖u‖`` (1 when either norm is 0, or when ``weight_decay == 0`` and not
  ``use_nvlamb``); ``p -= lr · ratio · u``. Computed in float32.
* ``FusedSGD(params, lr, momentum=0, dampening=0, weight_decay=0, nesterov=False,
  wd_after_momentum=False, materialize_master_grads=True, set_grad_none=False)`` =
  ``torch.optim.SGD`` (``wd_after_momentum=True`` raises: torch has no such mode).
* ``FusedAdagrad(params, lr=1e-2, eps=1e-10, weight_decay=0.0, set_grad_none=True,
  adagrad_w_mode=False)`` = ``torch.optim.Adagrad`` (``adagrad_w_mode=True`` raises).

``zero_grad()`` sets gradients to None when ``set_grad_none`` (apex's default for these classes).
"""
from __future__ import annotations

import torch

__all__ = ["FusedAdagrad", "FusedAdam", "FusedLAMB", "FusedSGD"]


class _SetGradNone:
    def zero_grad(self, set_to_none: bool | None = None) -> None:
        super().zero_grad(self._set_grad_none if set_to_none is None else set_to_none)


class FusedAdam(_SetGradNone, torch.optim.Optimizer):
    """apex's FusedAdam; see the module docstring."""

    def __init__(self, params, lr=1e-3, bias_correction=True, betas=(0.9, 0.999), eps=1e-8, adam_w_mode=True,
                 weight_decay=0.0, amsgrad=False, set_grad_none=True, capturable=False, master_weights=False):
        if amsgrad:
            raise RuntimeError("FusedAdam does not support the AMSGrad variant.")
        if master_weights:
            raise NotImplementedError("apex FusedAdam(master_weights=True) is not emulated on Ascend; keep float32 "
                                      "parameters and use torch.autocast instead.")
        defaults = dict(lr=lr, bias_correction=bias_correction, betas=betas, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)
        self.adam_w_mode = bool(adam_w_mode)
        self._set_grad_none = set_grad_none

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            b1, b2 = group["betas"]
            wd, eps, lr = group["weight_decay"], group["eps"], group["lr"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("FusedAdam does not support sparse gradients, please consider SparseAdam instead")
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, dtype=torch.float32)
                    state["exp_avg_sq"] = torch.zeros_like(p, dtype=torch.float32)
                state["step"] += 1
                t = state["step"]
                g = p.grad.float()
                w = p.float()
                if not self.adam_w_mode and wd:
                    g = g + wd * w
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                bc1 = 1 - b1 ** t if group["bias_correction"] else 1.0
                bc2 = 1 - b2 ** t if group["bias_correction"] else 1.0
                update = (m / bc1) / ((v / bc2).sqrt() + eps)
                if self.adam_w_mode and wd:
                    update = update + wd * w
                p.copy_(w - lr * update)
        return loss


class FusedLAMB(_SetGradNone, torch.optim.Optimizer):
    """apex's FusedLAMB; see the module docstring."""

    def __init__(self, params, lr=1e-3, bias_correction=True, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01,
                 amsgrad=False, adam_w_mode=True, grad_averaging=True, set_grad_none=True, max_grad_norm=1.0,
                 use_nvlamb=False):
        if amsgrad:
            raise RuntimeError("FusedLAMB does not support the AMSGrad variant.")
        defaults = dict(lr=lr, bias_correction=bias_correction, betas=betas, eps=eps, weight_decay=weight_decay,
                        grad_averaging=grad_averaging, max_grad_norm=max_grad_norm)
        super().__init__(params, defaults)
        self.adam_w_mode = bool(adam_w_mode)
        self.use_nvlamb = bool(use_nvlamb)
        self._set_grad_none = set_grad_none

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        grads = [p.grad for g in self.param_groups for p in g["params"] if p.grad is not None]
        if not grads:
            return loss
        for gr in grads:
            if gr.is_sparse:
                raise RuntimeError("FusedLAMB does not support sparse gradients, please consider SparseAdam instead")
        global_norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(gr.float()) for gr in grads]))
        for group in self.param_groups:
            b1, b2 = group["betas"]
            wd, eps, lr = group["weight_decay"], group["eps"], group["lr"]
            max_norm = group["max_grad_norm"]
            clip = torch.where(global_norm > max_norm, global_norm / max_norm, torch.ones_like(global_norm)) \
                if max_norm > 0 else torch.ones_like(global_norm)
            beta3 = 1 - b1 if group["grad_averaging"] else 1.0
            group["step"] = group.get("step", 0) + 1
            t = group["step"]
            bc1 = 1 - b1 ** t if group["bias_correction"] else 1.0
            bc2 = 1 - b2 ** t if group["bias_correction"] else 1.0
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p, dtype=torch.float32)
                    state["exp_avg_sq"] = torch.zeros_like(p, dtype=torch.float32)
                w = p.float()
                g = p.grad.float() / clip
                if not self.adam_w_mode and wd:
                    g = g + wd * w
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(b1).add_(g, alpha=beta3)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                update = (m / bc1) / ((v / bc2).sqrt() + eps)
                if self.adam_w_mode and wd:
                    update = update + wd * w
                ratio = torch.ones((), device=p.device)
                if self.use_nvlamb or wd != 0:
                    w_norm = torch.linalg.vector_norm(w)
                    u_norm = torch.linalg.vector_norm(update)
                    ratio = torch.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, ratio)
                p.copy_(w - lr * ratio * update)
        return loss


class FusedSGD(_SetGradNone, torch.optim.SGD):
    """apex's FusedSGD = torch.optim.SGD; see the module docstring."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 wd_after_momentum=False, materialize_master_grads=True, set_grad_none=False):
        if wd_after_momentum:
            raise NotImplementedError("apex FusedSGD(wd_after_momentum=True) has no torch equivalent on Ascend; "
                                      "torch.optim.SGD applies weight decay before momentum.")
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                         nesterov=nesterov)
        self._set_grad_none = set_grad_none


class FusedAdagrad(_SetGradNone, torch.optim.Adagrad):
    """apex's FusedAdagrad = torch.optim.Adagrad; see the module docstring."""

    def __init__(self, params, lr=1e-2, eps=1e-10, weight_decay=0.0, set_grad_none=True, adagrad_w_mode=False):
        if adagrad_w_mode:
            raise NotImplementedError("apex FusedAdagrad(adagrad_w_mode=True) has no torch equivalent on Ascend.")
        super().__init__(params, lr=lr, eps=eps, weight_decay=weight_decay)
        self._set_grad_none = set_grad_none


def __getattr__(name: str):
    if name.startswith("Fused"):
        raise AttributeError(
            f"apex.optimizers.{name} is not provided on Ascend by ascend-compat (FusedAdam, FusedLAMB, FusedSGD and "
            "FusedAdagrad are); use the torch.optim equivalent.")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

