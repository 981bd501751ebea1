"""Fault injection on torch_npu's own ``npu::`` ops: the op whose kernel runs below autograd
(``npu_fusion_attention``, with its explicit backward formula) and the op whose CPU reference runs at
``AutogradPrivateUse1`` (``npu_rms_norm``) both take the fault, keep their gradients, and get their
kernel back afterwards (the simulated NPU installed in-process by conftest)."""
from __future__ import annotations

import pytest
import torch

from ascend_compat.simulator import faults


def _attention(q, k, v):
    import torch_npu

    return torch_npu.npu_fusion_attention(q, k, v, 2, "BNSD", scale=0.25)[0]


def _rms(x, w):
    import torch_npu

    return torch_npu.npu_rms_norm(x, w)[0]


@pytest.mark.parametrize("op, make, call", [
    ("npu::npu_fusion_attention", lambda: [torch.randn(1, 2, 8, 16) for _ in range(3)], _attention),
    ("npu::npu_rms_norm", lambda: [torch.randn(2, 8), torch.rand(8) + 0.5], _rms),
])
def test_bias_reaches_the_npu_op_and_its_gradient_survives(sim, op, make, call):
    torch.manual_seed(0)
    inputs = [t.npu() for t in make()]
    x = inputs[0].requires_grad_()
    clean = call(x, *inputs[1:]).detach().cpu()
    with faults.inject(op, "bias", 0.05):
        faulty = call(x, *inputs[1:])
        faulty.sum().backward()
    assert torch.allclose(faulty.detach().cpu(), clean + 0.05, atol=1e-6)
    assert x.grad is not None and bool(x.grad.isfinite().all())
    assert torch.equal(call(x, *inputs[1:]).detach().cpu(), clean)  # the kernel is back


def test_nan_and_error_kinds_on_an_npu_op(sim):
    x, w = torch.randn(2, 8).npu(), torch.ones(8).npu()
    with faults.inject("npu::npu_rms_norm", "nan"):
        assert bool(_rms(x, w).cpu().isnan().any())
    with faults.inject("npu::npu_rms_norm", "error", 507035), pytest.raises(RuntimeError, match="507035"):
        _rms(x, w)


def test_an_npu_op_without_a_reference_is_refused(sim):
    from ascend_compat.simulator.torch_npu import _op_registry

    missing = sorted(_op_registry.op_names() - _op_registry.simulated())
    assert missing
    with pytest.raises(faults.FaultError, match="no kernel on the simulated NPU"):
        with faults.inject(f"npu::{missing[0]}", "bias", 1.0):
            pass
