"""Calls torch would answer with a confusing message on the simulated NPU get a clear one (what
happened, what to do; "simulator limit" where the real torch_npu would work), or work as on
torch_npu."""
from __future__ import annotations


import pytest
import torch

from _subproc import check, run_python


@pytest.mark.parametrize("make", [
    lambda: torch.empty(3, device="npu", pin_memory=True),
    lambda: torch.empty_strided((3,), (1,), device="npu", pin_memory=True),
    lambda: torch.zeros(3, device="npu", pin_memory=True),
    lambda: torch.randn(2, 2, device="npu", pin_memory=True),
])
def test_pin_memory_on_npu_is_refused_with_cuda_wording(make):
    with pytest.raises(RuntimeError, match=r"^Only dense CPU tensors can be pinned\. .*\.to\('npu', non_blocking=True\)"):
        make()
    assert torch.ones(3).pin_memory().is_pinned()  # pinning host memory itself still works


def test_npu_storage_resize_is_a_clear_simulator_limit():
    t = torch.ones(4, device="npu")
    storage = t.untyped_storage()
    assert storage.resize_(16) is storage  # same size: a no-op, as in torch
    for size in (0, 64):
        with pytest.raises(NotImplementedError, match="simulator limit.*tensor.resize_"):
            storage.resize_(size)
    assert t.tolist() == [1.0] * 4
    t.resize_(8)  # the tensor-level resize the message points to works
    assert t.shape == (8,) and t[:4].tolist() == [1.0] * 4


def test_dlpack_round_trips_npu_tensors_zero_copy_as_torch_npu_does():
    x = torch.arange(4.0, device="npu")
    for y in (torch.from_dlpack(x), torch.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(x))):
        assert y.device == x.device and y.data_ptr() == x.data_ptr()
        y.add_(1)
    assert x.tolist() == [2.0, 3.0, 4.0, 5.0]
    assert torch.from_dlpack(torch.ones(2)).device.type == "cpu"  # CPU unchanged


def test_dlpack_on_an_old_emulated_torch_npu_says_it_lacks_it():
    out = check(run_python("""
        import torch, ascend_compat.simulator as sim
        sim.install(torch_npu_version="2.5.1")
        try:
            torch.from_dlpack(torch.ones(2, device="npu"))
            print("accepted")
        except RuntimeError as exc:
            print("2.7" in str(exc) and "tensor.cpu()" in str(exc))
    """))
    assert out.split() == ["True"]
