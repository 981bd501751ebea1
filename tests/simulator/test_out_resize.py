"""``out=`` on the simulated NPU as on a device: zero-size and mis-sized outputs are resized (with
torch's warning for non-empty ones) and get the memory format torch gives them, the device
tensor itself (not only its host alias) takes the new geometry; a CPU ``out=`` with npu inputs is
refused with torch_npu's ``OpPreparation::check_tensor`` error."""
from __future__ import annotations

import warnings

import pytest
import torch


@pytest.mark.parametrize("args", [(0,), (2, 0), (0, 3), (3,), (2, 4)])
def test_eye_shapes_match_the_cpu(args):
    got = torch.eye(*args, device="npu")
    assert got.shape == torch.eye(*args).shape
    assert torch.equal(got.cpu(), torch.eye(*args))


def test_mis_sized_out_is_resized_in_place_with_torchs_warning():
    a, b = torch.randn(3, device="npu"), torch.randn(3, device="npu")
    out = torch.empty(5, device="npu")
    ptr = out.data_ptr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = torch.add(a, b, out=out)
    assert res is out and out.shape == (3,) and out.data_ptr() == ptr  # shrunk within its storage
    assert torch.equal(out.cpu(), (a + b).cpu())
    assert any("An output with one or more elements was resized" in str(w.message) for w in caught)


def test_zero_size_out_grows_without_warning():
    a = torch.randn(2, 3, device="npu")
    out = torch.empty(0, device="npu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.mul(a, 2, out=out)
        values, indices = torch.empty(0, device="npu"), torch.empty(0, dtype=torch.long, device="npu")
        torch.sort(a, dim=1, out=(values, indices))
    assert out.shape == (2, 3) and torch.equal(out.cpu(), a.cpu() * 2)
    ref_v, ref_i = torch.sort(a.cpu(), dim=1)
    assert torch.equal(values.cpu(), ref_v) and torch.equal(indices.cpu(), ref_i)


@pytest.mark.parametrize("out_shape", [(0,), (2, 3, 4, 5)])
def test_out_memory_format_follows_torch(out_shape):
    x = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    ref = torch.empty(out_shape)
    torch.add(x, x, out=ref)
    out = torch.empty(out_shape, device="npu")
    xn = x.to("npu")
    torch.add(xn, xn, out=out)
    assert out.stride() == ref.stride() and out.shape == ref.shape
    assert torch.equal(out.cpu(), ref)


@pytest.mark.parametrize("call", [
    lambda a: torch.add(a, a, out=torch.empty(3)),
    lambda a: torch.sum(a, 0, out=torch.empty(())),  # 0-dim: the CPU-scalar exemption is for inputs only
    lambda a: torch.dot(a, a, out=torch.empty(())),
    lambda a: torch.cumsum(a, 0, out=torch.empty(3)),
    lambda a: torch.sort(a, out=(torch.empty(3), torch.empty(3, dtype=torch.long))),
], ids=["add", "sum_0dim", "dot_0dim", "cumsum", "sort"])
def test_cpu_out_with_npu_inputs_is_refused(call):
    a = torch.randn(3, device="npu")
    with pytest.raises(RuntimeError, match=r"^output with device cpu doesn't match the desired device NPU\n"
                                           r"\[ERROR\] .* ERR01001 OPS invalid parameter"):
        call(a)


def test_cpu_out_of_a_cpu_op_still_works():
    out = torch.empty(())
    torch.sum(torch.ones(3), 0, out=out)
    assert out.item() == 3.0


@pytest.mark.parametrize("dtype", [torch.float32, torch.int8, torch.int64, torch.uint8])
def test_out_view_of_an_input_storage_keeps_its_place(dtype):
    """torch_npu's adapted ``test_cat_out(_fast_path_dim0_dim1)``: ``cat`` into ``out=w[6:10]`` while
    its inputs are views of ``w`` writes there and returns that very view (the shared host alias
    starts at the storage's beginning, so its offset is not a move)."""
    w = torch.arange(24, device="npu").to(dtype)
    expected = torch.cat([w[:2].cpu(), w[4:6].cpu()])
    res = torch.cat([w[:2], w[4:6]], out=w[6:10])
    assert res.storage_offset() == 6 and res.data_ptr() == w[6:10].data_ptr()
    assert torch.equal(res.cpu(), expected) and torch.equal(w[6:10].cpu(), expected)
    assert torch.equal(w[:6].cpu(), torch.arange(6).to(dtype))


@pytest.mark.parametrize("dim", [0, 1])
def test_cat_into_a_narrowed_out(dim):
    x = torch.zeros((10, 5, 2), device="npu")
    y = x.narrow(dim, 0, x.shape[dim] - 2)
    val = torch.full_like(y[0], 3.0)
    res = torch.cat((val[None],) * y.shape[0], dim=0, out=y)
    assert res is y and res.storage_offset() == 0
    assert torch.equal(y.cpu(), torch.full(y.shape, 3.0))
    assert x.sum().item() == 3.0 * y.numel()  # nothing written outside the view
