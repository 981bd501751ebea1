"""Pinned host memory as torch_npu has it: ``pin_memory=True`` factories, ``Tensor.pin_memory()`` /
``is_pinned()``, non-blocking copies both ways (a non-blocking npu->cpu copy returns a pinned
tensor: torch_npu's ``_to_copy`` in ToKernelNpu.cpp), DataLoader(pin_memory=True).

The pinned allocator is a C++ backend hook (simulator/_cext); without a C++ toolchain only the
Python-level emulation remains, tested in a subprocess."""
from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from ascend_compat.simulator import _guard
from tests.simulator._subproc import run_python

needs_hooks = pytest.mark.skipif(not _guard.cxx_hooks_active(),
                                 reason=f"C++ backend hooks unavailable: {_guard.pinned_memory_reason()}")


@needs_hooks
@pytest.mark.parametrize("make", [
    lambda: torch.empty(5, pin_memory=True),
    lambda: torch.randn(2, 3, pin_memory=True),
    lambda: torch.zeros(4, dtype=torch.float16, pin_memory=True),
    lambda: torch.empty_strided((2, 3), (1, 2), pin_memory=True),
    lambda: torch.ones(0, pin_memory=True),
], ids=["empty", "randn", "zeros", "empty_strided", "zero_size"])
def test_pin_memory_factories_give_pinned_host_tensors(make):
    t = make()
    assert t.device.type == "cpu" and t.is_pinned()
    if t.numel():
        assert t[1:].is_pinned()  # a view into a pinned block is pinned
    assert not torch.empty(5).is_pinned()


def test_pin_memory_copies_into_pinned_memory():
    t = torch.arange(6.0).reshape(2, 3)
    p = t.pin_memory()
    assert p.is_pinned() and not t.is_pinned() and torch.equal(p, t)
    assert p.data_ptr() != t.data_ptr()
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        torch.ones(2, device="npu").pin_memory()
    assert not torch.ones(2, device="npu").is_pinned()


def test_non_blocking_copies_both_ways_then_synchronize():
    src = torch.randn(4, 3).pin_memory()
    dev = src.to("npu", non_blocking=True)
    back = dev.to("cpu", non_blocking=True)
    torch.npu.synchronize()
    assert dev.device.type == "npu"
    assert back.is_pinned() and torch.equal(back, src)  # torch_npu pins the non-blocking output
    assert not dev.to("cpu").is_pinned()  # a blocking copy is plain host memory
    event = torch.npu.Event()
    half = (dev * 2).to("cpu", non_blocking=True)
    event.record()
    event.synchronize()
    assert half.is_pinned() and torch.equal(half, src * 2)
    t = dev.t()  # non-contiguous: strides kept, as torch_npu's _to_copy keeps them
    back_t = t.to("cpu", non_blocking=True)
    assert back_t.is_pinned() and back_t.stride() == (1, 3) and torch.equal(back_t, src.t())


def test_dataloader_pin_memory_then_non_blocking_transfer():
    ds = TensorDataset(torch.arange(12.0).reshape(6, 2), torch.arange(6))
    seen = []
    for x, y in DataLoader(ds, batch_size=4, pin_memory=True):
        assert x.is_pinned() and y.is_pinned()
        seen.append(x.to("npu", non_blocking=True) * 1)
    torch.npu.synchronize()
    assert torch.equal(torch.cat(seen).cpu(), torch.arange(12.0).reshape(6, 2))


def test_without_a_cpp_toolchain_pinning_is_emulated_and_factories_say_why(tmp_path):
    proc = run_python("""
import torch
from ascend_compat import simulator
simulator.install()
from ascend_compat.simulator import _guard
print("hooks", _guard.cxx_hooks_active())
print("reason", _guard.pinned_memory_reason())
p = torch.arange(3.0).pin_memory()
print("pin", p.is_pinned(), torch.arange(3.0).is_pinned())
back = p.to("npu", non_blocking=True).to("cpu", non_blocking=True)
print("roundtrip", back.is_pinned(), torch.equal(back, p))
try:
    torch.empty(2, pin_memory=True)
except NotImplementedError as exc:
    print("factory", "getPinnedMemoryAllocator" in str(exc))
""", env={"TORCH_EXTENSIONS_DIR": str(tmp_path), "CXX": "no-such-compiler"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "hooks False" in out and "no C++ compiler was found" in out
    assert "pin True False" in out and "roundtrip True True" in out and "factory True" in out
