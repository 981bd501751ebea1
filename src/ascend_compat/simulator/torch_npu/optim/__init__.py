"""``torch_npu.optim`` of the stand-in: torch_npu's fused optimizers as references on ``torch.optim``.

torch_npu's ``NpuFused*`` optimizers flatten parameters into one buffer and run a fused kernel; the update
rule is the torch optimizer's. Here each is the torch optimizer with torch_npu's signature (no
``foreach``/``fused`` switches) plus torch_npu's ``clip_grad_norm_fused_(max_norm, norm_type=2)``.
``NpuFusedRMSpropTF`` is RMSprop with epsilon inside the square root and the TensorFlow initial square
average of 1 as in torch_npu; ``NpuFusedLamb``, ``NpuFusedAdamP`` and ``NpuFusedBertAdam`` have no torch
counterpart and raise ``NotImplementedError`` naming themselves when constructed.
"""
from __future__ import annotations

import torch

__all__ = ["NpuFusedOptimizerBase", "NpuFusedSGD", "NpuFusedAdadelta", "NpuFusedLamb", "NpuFusedAdam",
           "NpuFusedAdamW", "NpuFusedAdamP", "NpuFusedBertAdam", "NpuFusedRMSprop", "NpuFusedRMSpropTF"]


class NpuFusedOptimizerBase(torch.optim.Optimizer):
    """Base of torch_npu's fused optimizers: adds ``clip_grad_norm_fused_``."""

    def clip_grad_norm_fused_(self, max_norm: float, norm_type: float = 2.0) -> torch.Tensor:
        """Clip the gradients of every parameter of this optimizer; return their total norm."""
        params = [p for group in self.param_groups for p in group["params"] if p.grad is not None]
        return torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type)


class NpuFusedSGD(NpuFusedOptimizerBase, torch.optim.SGD):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False):
        torch.optim.SGD.__init__(self, params, lr=lr, momentum=momentum, dampening=dampening,
                                 weight_decay=weight_decay, nesterov=nesterov, foreach=False)


class NpuFusedAdadelta(NpuFusedOptimizerBase, torch.optim.Adadelta):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0):
        torch.optim.Adadelta.__init__(self, params, lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, foreach=False)


class NpuFusedAdam(NpuFusedOptimizerBase, torch.optim.Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False):
        torch.optim.Adam.__init__(self, params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                  amsgrad=amsgrad, foreach=False)


class NpuFusedAdamW(NpuFusedOptimizerBase, torch.optim.AdamW):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False):
        torch.optim.AdamW.__init__(self, params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                   amsgrad=amsgrad, foreach=False)


class NpuFusedRMSprop(NpuFusedOptimizerBase, torch.optim.RMSprop):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False):
        torch.optim.RMSprop.__init__(self, params, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                     momentum=momentum, centered=centered, foreach=False)


class NpuFusedRMSpropTF(NpuFusedOptimizerBase):
    """TensorFlow-style RMSprop: ``v = alpha·v + (1-alpha)·g²`` from ``v = 1``;
    ``buf = momentum·buf + lr·g/sqrt(v + eps)``; ``p -= buf``."""

    def __init__(self, params, lr=1e-2, alpha=0.9, eps=1e-10, weight_decay=0, momentum=0.0, centered=False):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                if group["weight_decay"]:
                    g = g.add(p, alpha=group["weight_decay"])
                state = self.state[p]
                if not state:
                    state["square_avg"] = torch.ones_like(p)
                    state["momentum_buffer"] = torch.zeros_like(p)
                    state["grad_avg"] = torch.zeros_like(p)
                v = state["square_avg"].mul_(group["alpha"]).addcmul_(g, g, value=1 - group["alpha"])
                denom = v
                if group["centered"]:
                    ga = state["grad_avg"].mul_(group["alpha"]).add_(g, alpha=1 - group["alpha"])
                    denom = v.addcmul(ga, ga, value=-1)
                denom = denom.add(group["eps"]).sqrt_()
                if group["momentum"] > 0:
                    buf = state["momentum_buffer"].mul_(group["momentum"]).addcdiv_(g, denom, value=group["lr"])
                    p.sub_(buf)
                else:
                    p.addcdiv_(g, denom, value=-group["lr"])
        return loss


def _not_simulated(name: str):
    class Refused(NpuFusedOptimizerBase):
        def __init__(self, params, *args, **kwargs):
            raise NotImplementedError(f"torch_npu.optim.{name} is not simulated by ascend-compat: torch has no "
                                      f"reference optimizer for it; use torch.optim.AdamW or NpuFusedAdamW on the "
                                      "simulated NPU")

    Refused.__name__ = Refused.__qualname__ = name
    return Refused


NpuFusedLamb = _not_simulated("NpuFusedLamb")
NpuFusedAdamP = _not_simulated("NpuFusedAdamP")
NpuFusedBertAdam = _not_simulated("NpuFusedBertAdam")
