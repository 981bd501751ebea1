"""SyncBatchNorm on the simulated NPU: PyTorch routes PrivateUse1 to the CUDA-style kernels
(``batch_norm_stats``, ``batch_norm_gather_stats_with_counts``, ``batch_norm_elemt``,
``batch_norm_backward_reduce``, ``batch_norm_backward_elemt``), which torch_npu has natively.

The kernels are checked against CPU ``BatchNorm`` through ``torch.nn.modules._functions.SyncBatchNorm``
(the autograd function ``nn.SyncBatchNorm`` uses) in a 1-process hccl group, and a real
``nn.SyncBatchNorm`` runs under a 2-process torchrun in test_distributed.py.
"""
from __future__ import annotations

import pytest
import torch

from _subproc import check, run_python


def test_kernels_against_the_batch_norm_math():
    torch.manual_seed(0)
    x = torch.randn(4, 3, 5, 5)
    xn = x.npu()
    mean, invstd = torch.batch_norm_stats(xn, 1e-5)
    torch.testing.assert_close(mean.cpu(), x.mean((0, 2, 3)))
    torch.testing.assert_close(invstd.cpu(), (x.var((0, 2, 3), unbiased=False) + 1e-5).rsqrt())
    # two "replicas" with different counts: the gathered statistics are those of the concatenation
    a, b = x[:1], x[1:]
    stats = [torch.batch_norm_stats(t.npu(), 1e-5) for t in (a, b)]
    rm, rv = torch.zeros(3, device="npu"), torch.ones(3, device="npu")
    counts = torch.tensor([a.numel() // 3, b.numel() // 3], dtype=torch.float32, device="npu")
    gmean, ginvstd = torch.batch_norm_gather_stats_with_counts(
        xn, torch.stack([s[0] for s in stats]), torch.stack([s[1] for s in stats]), rm, rv, 0.1, 1e-5, counts)
    torch.testing.assert_close(gmean.cpu(), x.mean((0, 2, 3)))
    torch.testing.assert_close(ginvstd.cpu(), invstd.cpu())
    torch.testing.assert_close(rm.cpu(), 0.1 * x.mean((0, 2, 3)))
    torch.testing.assert_close(rv.cpu(), 0.9 + 0.1 * x.var((0, 2, 3), unbiased=True))
    w, bias = torch.randn(3), torch.randn(3)
    y = torch.batch_norm_elemt(xn, w.npu(), bias.npu(), gmean, ginvstd, 1e-5)
    ref = torch.nn.functional.batch_norm(x, None, None, w, bias, training=True, eps=1e-5)
    torch.testing.assert_close(y.cpu(), ref)
    out = torch.empty(0, device="npu")
    torch.batch_norm_elemt(xn, w.npu(), bias.npu(), gmean, ginvstd, 1e-5, out=out)
    torch.testing.assert_close(out.cpu(), ref)


def test_half_input_keeps_float32_statistics():
    x = torch.randn(8, 4, 3).half()
    mean, invstd = torch.batch_norm_stats(x.npu(), 1e-5)
    assert mean.dtype == invstd.dtype == torch.float32
    torch.testing.assert_close(mean.cpu(), x.float().mean((0, 2)))
    y = torch.batch_norm_elemt(x.npu(), None, None, mean, invstd, 1e-5)
    assert y.dtype == torch.float16


def test_backward_reduce_flags_and_channels_last():
    x = torch.randn(2, 3, 4, 4).to(memory_format=torch.channels_last)
    mean, invstd = torch.batch_norm_stats(x.npu(), 1e-5)
    dy = torch.randn_like(x)
    sum_dy, sum_dy_xmu, gw, gb = torch.batch_norm_backward_reduce(
        dy.npu(), x.npu(), mean, invstd, None, True, False, False)
    assert gw is None and gb is None
    torch.testing.assert_close(sum_dy.cpu(), dy.sum((0, 2, 3)))
    y = torch.batch_norm_elemt(x.npu(), None, None, mean, invstd, 1e-5)
    assert y.is_contiguous(memory_format=torch.channels_last)
    with pytest.raises(RuntimeError, match="same device"):
        torch.batch_norm_elemt(x.npu(), torch.ones(3), None, mean, invstd, 1e-5)


def test_sync_batchnorm_function_matches_cpu_batchnorm_in_a_one_process_group():
    out = check(run_python("""
        import os, torch, torch.distributed as dist
        import ascend_compat.simulator as sim
        from torch.nn.modules._functions import SyncBatchNorm as SyncBNFunction
        sim.install()
        dist.init_process_group("hccl", rank=0, world_size=1, store=dist.HashStore())
        torch.manual_seed(0)
        ref = torch.nn.BatchNorm2d(3)
        ref.weight.data.uniform_(0.5, 1.5); ref.bias.data.uniform_(-0.5, 0.5)
        sync = torch.nn.SyncBatchNorm.convert_sync_batchnorm(torch.nn.Sequential(ref)).npu()[0]
        ref = torch.nn.BatchNorm2d(3); ref.load_state_dict({k: v.cpu() for k, v in sync.state_dict().items()})
        x = torch.randn(4, 3, 6, 6, requires_grad=True)
        xn = x.detach().npu().requires_grad_()
        g = torch.randn(4, 3, 6, 6)
        y = SyncBNFunction.apply(xn, sync.weight, sync.bias, sync.running_mean, sync.running_var,
                                 sync.eps, sync.momentum, dist.group.WORLD, 1)
        y.backward(g.npu())
        yr = ref(x)
        yr.backward(g)
        torch.testing.assert_close(y.cpu(), yr)
        torch.testing.assert_close(xn.grad.cpu(), x.grad)
        torch.testing.assert_close(sync.weight.grad.cpu(), ref.weight.grad)
        torch.testing.assert_close(sync.bias.grad.cpu(), ref.bias.grad)
        torch.testing.assert_close(sync.running_mean.cpu(), ref.running_mean)
        torch.testing.assert_close(sync.running_var.cpu(), ref.running_var)
        # the module itself (one process: plain batch norm path) agrees too
        print(torch.allclose(sync(xn.detach()).cpu(), ref(x.detach()), atol=1e-5))
        dist.destroy_process_group()
    """))
    assert out.split() == ["True"]
