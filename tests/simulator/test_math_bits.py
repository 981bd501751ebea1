"""Lazy conjugate / negative views (``conj()``, ``_neg_view``) on npu: reads see the bit, and
in-place writes through such a view land in the base tensor exactly as on CPU."""
from __future__ import annotations

import pytest
import torch

_WRITES = {
    "conj.mul_": lambda m: m.conj().mul_(2),
    "conj.add_": lambda m: m.conj().add_(1j),
    "conj.copy_": lambda m: m.conj().copy_(torch.tensor([5j, 6], dtype=torch.complex64).to(m.device)),
    "conj.copy_from_cpu": lambda m: m.conj().copy_(torch.tensor([5j, 6], dtype=torch.complex64)),
    "conj.index.zero_": lambda m: m.conj()[0].zero_(),
    "conj.setitem": lambda m: m.conj().__setitem__(0, 7j),
    "conj.out": lambda m: torch.mul(m, 2, out=m.conj()),
    "neg.mul_": lambda m: torch._neg_view(m).mul_(2),
    "neg.add_": lambda m: torch._neg_view(m).add_(1),
    "neg.copy_": lambda m: torch._neg_view(m).copy_(torch.tensor([1j, 2], dtype=torch.complex64)),
    "conj.neg.mul_": lambda m: torch._neg_view(m.conj()).mul_(3),
}


@pytest.mark.parametrize("name", sorted(_WRITES))
def test_writes_through_lazy_views_reach_the_base(name):
    ref = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex64)
    m = ref.npu()
    _WRITES[name](ref)
    _WRITES[name](m)
    assert m.cpu().tolist() == ref.tolist()


def test_float_neg_view_writes():
    ref = torch.tensor([1.0, -2.0, 3.0])
    m = ref.npu()
    for t in (ref, m):
        torch._neg_view(t).mul_(2)
    assert m.cpu().tolist() == ref.tolist() == [2.0, -4.0, 6.0]


def test_reads_of_lazy_views():
    ref = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex64)
    m = ref.npu()
    assert (m.conj() * 1).cpu().tolist() == (ref.conj() * 1).tolist()
    assert (torch._neg_view(m) + 0).cpu().tolist() == (torch._neg_view(ref) + 0).tolist()
    assert m.conj().cpu().tolist() == ref.conj().tolist()
    assert torch.view_as_real(m.conj().resolve_conj()).cpu().tolist() == torch.view_as_real(ref.conj().resolve_conj()).tolist()
