"""In-place and ``out=`` ops whose inputs alias the written tensor fail on the simulated NPU as on
CPU/CUDA ("unsupported operation: some elements of the input tensor and the written-to tensor
refer to a single memory location"): the CPU kernel's own overlap checks see the aliasing because
views of one device storage get host aliases on one host storage. torch_npu's own copies of these
tests (``test_index_add_mem_overlap``, ``test_masked_scatter_mem_overlap``) are enabled on NPUs."""
from __future__ import annotations

import pytest
import torch

PARTIAL = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location"
INTERNAL = "unsupported operation: more than one element of the written-to tensor refers to a single memory location"


def _cases(d):
    y = torch.arange(6.0, device=d)
    ind = torch.tensor([2, 1, 0], device=d)
    return {
        "scatter_add_self": (lambda: y.scatter_add_(0, ind, y[:3]), PARTIAL),
        "scatter_src_is_self": (lambda: y[:3].scatter_(0, ind, y[:3]), PARTIAL),
        "index_add_slice": (lambda: y.index_add_(0, ind, y[:3]), PARTIAL),
        "index_add_index_is_self": (lambda: ind.index_add_(0, ind.clone(), ind), PARTIAL),
        "partial_add_": (lambda: y[1:].add_(y[:-1]), PARTIAL),
        "out_partial": (lambda: torch.add(y[:3], y[:3], out=y[1:4]), PARTIAL),
        "addcmul_out_partial": (lambda: torch.addcmul(y[:3], y[:3], y[:3], out=y[1:4]), PARTIAL),
        "expanded_written": (lambda: torch.rand(1, device=d).expand(6).index_add_(0, ind, y[:3]), INTERNAL),
    }


@pytest.mark.parametrize("name", list(_cases("cpu")))
def test_aliasing_in_place_ops_fail_as_on_cpu(name):
    cpu_fn, cpu_msg = _cases("cpu")[name]
    with pytest.raises(RuntimeError, match=cpu_msg):
        cpu_fn()  # the reference: torch's CPU kernel refuses it
    npu_fn, msg = _cases("npu")[name]
    with pytest.raises(RuntimeError, match=msg):
        npu_fn()


def test_full_overlap_elementwise_and_distinct_storages_still_work():
    y = torch.arange(4.0, device="npu")
    y.add_(y)  # full overlap is allowed for elementwise ops, as on CPU
    assert torch.equal(y.cpu(), torch.arange(4.0) * 2)
    z = torch.ones(4, device="npu")
    z.mul_(y)
    assert torch.equal(z.cpu(), torch.arange(4.0) * 2)
    idx = torch.tensor([0, 0, 1], device="npu")
    acc = torch.zeros(2, device="npu")
    acc.scatter_add_(0, idx, torch.ones(3, device="npu"))
    assert acc.tolist() == [2.0, 1.0]
    out = torch.empty(3, device="npu")
    torch.add(y[:3], y[1:], out=out)  # inputs overlap each other, not the output
    assert out.tolist() == [2.0, 6.0, 10.0]
