"""The float64 policy (issue 2 §2 bullet 5; pitfall 7): error (default), strict, warn, allow."""
from __future__ import annotations

import warnings

import pytest
import torch

from ascend_compat import simulator
from tests.simulator._subproc import check, run_python


def test_default_policy_rejects_float64_and_complex128():
    assert simulator.config().float64 == "error"
    with pytest.raises(TypeError, match="float64 tensors are not supported on Ascend NPU"):
        torch.ones(3, dtype=torch.float64, device="npu")
    with pytest.raises(TypeError, match="float64"):
        torch.ones(3).double().to("npu")
    with pytest.raises(TypeError, match="complex128"):
        torch.zeros(2, dtype=torch.complex128, device="npu")
    with pytest.raises(TypeError, match="float64"):
        torch.ones(3, device="npu").double()  # op outputs go through the same funnel


def test_default_policy_allows_single_values():
    s = torch.tensor(2.5, dtype=torch.float64, device="npu")
    assert s.item() == 2.5 and s.dtype == torch.float64
    assert torch.tensor([2.5], dtype=torch.float64, device="npu").shape == (1,)  # e.g. pinv tolerances
    with pytest.raises(TypeError):
        torch.tensor([2.5, 1.0], dtype=torch.float64, device="npu")
    assert torch.ones(3, device="npu").sum(dtype=torch.float64).item() == 3.0


def test_pytorch_internals_in_float64_still_work():
    # printing upcasts to float64 on the tensor's device; GradScaler uses scale.double().reciprocal()
    x = torch.tensor([1e-8, 1.0, 123456.0], device="npu")
    assert "device='npu:0'" in repr(x)
    m = torch.nn.Linear(3, 1).npu()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("npu")
    with torch.autocast("npu", dtype=torch.float16):
        loss = m(x[None]).float().sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert m.weight.grad is not None and torch.isfinite(m.weight).all()


def test_warn_and_allow_modes():
    with simulator.policy(float64="warn"):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            t = torch.ones(2, dtype=torch.float64, device="npu")
        assert t.dtype == torch.float64
        assert any("float64 tensor created on the simulated NPU" in str(w.message) for w in rec)
    with simulator.policy(float64="allow"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            t = torch.ones(2, dtype=torch.float64, device="npu") * 2
        assert t.tolist() == [2.0, 2.0]
    with pytest.raises(TypeError):  # back to the installed policy
        torch.ones(2, dtype=torch.float64, device="npu")
    with pytest.raises(ValueError, match="float64 policy must be one of"):
        with simulator.policy(float64="sometimes"):
            pass


def test_strict_mode_rejects_0dim_too():
    out = check(run_python("""
        import torch
        from ascend_compat import simulator
        simulator.install(float64="strict")
        print("config", simulator.config().float64)
        try:
            torch.tensor(1.0, dtype=torch.float64, device="npu")
        except TypeError as e:
            print("rejected", "strict" in str(e))
        print(torch.ones(2, device="npu"))
    """))
    assert "config strict" in out and "rejected True" in out and "device='npu:0'" in out
