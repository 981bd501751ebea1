"""Ops torch_npu leaves to torch's own composite kernels behave on the simulated NPU as that
composite does on the CPU (values and exception types): ``torch.where`` with complex32 (chalf)
operands, ``torch.rot90``'s argument errors. ``rot90`` has no torch_npu kernel (not in the native-op
table), so on real torch_npu its errors are the installed torch's; torch_npu's adapted
``test_rot90`` expecting RuntimeError for an out-of-range dim follows an older torch, whose
composite raised RuntimeError ("Rotation dim0 out of range") where torch 2.13 raises IndexError."""
from __future__ import annotations

import pytest
import torch

from ascend_compat import data


def test_where_with_complex32_operands_matches_the_cpu():
    cond = torch.tensor([True, False, True, False])
    a = torch.tensor([1 + 2j, 3, 4j, 5], dtype=torch.complex32)
    b = torch.tensor([0, -1j, 2, 7 - 1j], dtype=torch.complex32)
    cases = [(a, b), (a, 0), (1j, b), (a, torch.zeros(4)), (a.conj(), b), (a, torch.tensor(2.0)),
             (a, b.to(torch.complex64)), (a[::2].expand(2, 2).reshape(4), b)]
    for x, y in cases:
        ref = torch.where(cond, x, y)
        to_npu = (lambda v: v.to("npu") if isinstance(v, torch.Tensor) and v.dim() else v)
        got = torch.where(cond.to("npu"), to_npu(x), to_npu(y))
        assert got.device.type == "npu" and got.dtype == ref.dtype
        assert torch.equal(got.cpu().to(torch.complex64), ref.to(torch.complex64))


@pytest.mark.parametrize("dims", [[0, -3], [0, 2], [1, 1], [0, 1, 2], [0]])
def test_rot90_argument_errors_are_the_composites(dims):
    assert "rot90" not in data.native_ops("2.14")  # torch's composite on real torch_npu too
    with pytest.raises(Exception) as cpu:
        torch.arange(4).view(2, 2).rot90(1, dims)
    with pytest.raises(Exception) as npu:
        torch.arange(4, device="npu").view(2, 2).rot90(1, dims)
    assert type(npu.value) is type(cpu.value) and str(npu.value) == str(cpu.value)


def test_rot90_values():
    data_ = torch.arange(1, 9).view(2, 2, 2)
    for k in range(-5, 6):
        assert torch.equal(data_.to("npu").rot90(k, [1, -1]).cpu(), data_.rot90(k, [1, -1]))
