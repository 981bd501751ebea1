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


def test_npu_storage_resizes_in_place_with_accounted_memory():
    # as torch_npu (FSDP2 frees parameter memory with storage.resize_(0) and regrows it)
    from ascend_compat.simulator import _guard

    if not _guard.cxx_hooks_active():
        pytest.skip(f"the simulator's C++ part is not loaded here: {_guard.pinned_memory_reason()}")
    torch.npu.synchronize()
    base = torch.npu.memory_allocated()
    t = torch.arange(4.0, device="npu")
    storage = t.untyped_storage()
    assert storage.resize_(16) is storage  # same size: a no-op, as in torch
    view = torch.empty(0, device="npu").set_(storage, 0, (4,), (1,))
    storage.resize_(64)  # grows: the first 16 bytes kept, every tensor on the storage sees the new memory
    assert storage.nbytes() == 64 and t.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert torch.npu.memory_allocated() - base == 512  # one 64-byte block (512-byte rounding)
    view.fill_(7.0)
    assert t.tolist() == [7.0] * 4
    storage.resize_(0)
    assert storage.nbytes() == 0 and torch.npu.memory_allocated() == base
    storage.resize_(16)
    t.fill_(2.0)
    assert t.cpu().tolist() == [2.0] * 4 and torch.npu.memory_allocated() - base == 512
    del t, view, storage
    assert torch.npu.memory_allocated() == base


def test_without_the_cpp_part_storage_resize_is_a_clear_simulator_limit(tmp_path):
    out = check(run_python("""
import warnings
warnings.simplefilter("ignore")
import ascend_compat.simulator as sim
sim.install()
import torch
t = torch.ones(4, device="npu")
storage = t.untyped_storage()
print(storage.resize_(16) is storage)
for size in (0, 64):
    try:
        storage.resize_(size)
    except NotImplementedError as exc:
        print("simulator limit" in str(exc), "tensor.resize_" in str(exc))
t.resize_(8)  # the tensor-level resize the message points to works
print(t.shape == (8,), t[:4].tolist() == [1.0] * 4)
""", env={"TORCH_EXTENSIONS_DIR": str(tmp_path), "CXX": "no-such-compiler"}))
    assert out.split() == ["True"] * 7


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
