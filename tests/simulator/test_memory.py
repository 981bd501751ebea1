"""Exact memory accounting, capacity/OOM in torch_npu's wording, the host_alias/to_device interface."""
from __future__ import annotations

import gc
import threading

import torch

from ascend_compat.simulator import _memory
from tests.simulator._subproc import check, run_python


def test_round_size_matches_torch_npu_allocator():
    assert [_memory.round_size(n) for n in (0, 1, 480, 481, 1000, 4096)] == [0, 512, 512, 1024, 1536, 4608]


def test_allocation_and_release_are_exact():
    gc.collect()
    base = _memory.memory_allocated(0)
    stats0 = _memory.memory_stats(0)
    x = torch.empty(1000, device="npu")  # 4000 bytes -> 4096 block
    assert _memory.memory_allocated(0) - base == _memory.round_size(4000)
    v = x[10:20]  # a view allocates nothing
    assert _memory.memory_allocated(0) - base == _memory.round_size(4000)
    del x
    assert _memory.memory_allocated(0) - base == _memory.round_size(4000)  # the view keeps it alive
    del v
    assert _memory.memory_allocated(0) == base
    stats = _memory.memory_stats(0)
    assert stats["allocation.all.allocated"] - stats0["allocation.all.allocated"] == 1
    assert stats["allocation.all.freed"] - stats0["allocation.all.freed"] == 1
    assert stats["allocated_bytes.all.freed"] - stats0["allocated_bytes.all.freed"] == _memory.round_size(4000)


def test_op_outputs_are_accounted_and_peak_resets():
    gc.collect()
    base = _memory.memory_allocated(0)
    a = torch.ones(256, device="npu")
    _memory.reset_peak_memory_stats(0)
    b = a * 2
    assert _memory.memory_allocated(0) - base == 2 * _memory.round_size(1024)
    del b
    assert _memory.max_memory_allocated(0) - base == 2 * _memory.round_size(1024)
    _memory.reset_peak_memory_stats(0)
    assert _memory.max_memory_allocated(0) == _memory.memory_allocated(0)
    keys = _memory.memory_stats(0)
    for k in ("allocated_bytes.all.current", "allocated_bytes.all.peak", "allocated_bytes.all.allocated",
              "allocated_bytes.all.freed", "allocation.all.current", "allocation.all.peak",
              "allocation.all.allocated", "allocation.all.freed", "reserved_bytes.all.current",
              "reserved_bytes.all.peak", "num_ooms"):
        assert k in keys
    _memory.reset_accumulated_memory_stats(0)
    assert _memory.memory_stats(0)["allocation.all.allocated"] == 0
    del a


def test_host_alias_and_to_device_are_zero_copy():
    x = torch.zeros(3, device="npu")
    h = _memory.host_alias(x)
    assert h.device.type == "cpu" and h.data_ptr() == x.data_ptr()
    h[1] = 5
    assert x.tolist() == [0.0, 5.0, 0.0]
    c = torch.arange(4.0)
    d = _memory.to_device(c, 0)
    assert d.device == torch.device("npu:0") and d.data_ptr() == c.data_ptr()
    c[0] = 9
    assert d[0].item() == 9


def test_counters_are_thread_safe():
    gc.collect()
    base = _memory.memory_allocated(0)

    def work():
        for _ in range(200):
            t = torch.empty(100, device="npu") + 1
            del t

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _memory.memory_allocated(0) == base


def test_backward_releases_memory():
    gc.collect()
    base = _memory.memory_allocated(0)
    w = torch.randn(16, 16, device="npu", requires_grad=True)
    (w @ w).relu().sum().backward()
    g = w.grad
    del w
    gc.collect()
    assert _memory.memory_allocated(0) - base == _memory.round_size(g.numel() * 4)


def test_backward_on_device_threads_keeps_exact_accounting():
    # allocations and releases made on torch's autograd device thread reach the same counters
    out = check(run_python("""
        import gc, torch
        from ascend_compat import simulator
        from ascend_compat.simulator import _memory
        simulator.install(autograd_threads="device")
        base = torch.npu.memory_allocated()
        w = torch.randn(64, 64, device="npu", requires_grad=True)
        for _ in range(50):
            w.grad = None
            (w @ w).tanh().sum().backward()
        gc.collect()
        live = _memory.round_size(64 * 64 * 4) * 2  # w and w.grad
        print("exact:", torch.npu.memory_allocated() - base == live,
              "peak above:", torch.npu.max_memory_allocated() - base > live)
    """))
    assert "exact: True peak above: True" in out


def test_capacity_raises_out_of_memory_in_torch_npu_wording():
    out = check(run_python("""
        import torch
        from ascend_compat import simulator
        simulator.install(memory_capacity="1M")
        a = torch.empty(100_000, device="npu")  # 400 KB
        try:
            torch.empty(200_000, device="npu")  # 800 KB more: over 1 MiB
        except torch.OutOfMemoryError as e:
            print("OOM|" + str(e))
        print("ooms", torch.npu.memory_stats()["num_ooms"] if hasattr(torch.npu, "memory_stats")
              else simulator._memory.memory_stats(0)["num_ooms"])
        del a
        b = torch.empty(200_000, device="npu")  # fits once a is freed
        print("after free ok", b.shape[0])
    """))
    msg = out.split("OOM|", 1)[1].splitlines()[0]
    # 800000 B + 32 rounded to 512 = 800256 B = 781.50 KiB; c10's format_size keeps KiB up to 1 MiB
    assert msg.startswith("NPU out of memory. Tried to allocate 781.50 KiB (NPU 0; 1024.00 KiB total capacity; "
                          "391.00 KiB already allocated; 391.00 KiB current active; 633.00 KiB free; "
                          "391.00 KiB reserved in total by PyTorch).If reserved memory")
    assert "max_split_size_mb" in msg
    assert "ooms 1" in out and "after free ok 200000" in out


def test_capacity_applies_to_op_outputs():
    out = check(run_python("""
        import torch
        from ascend_compat import simulator
        simulator.install(memory_capacity=8192)
        a = torch.ones(1000, device="npu")
        try:
            b = a * 2
            c = a + b
        except torch.OutOfMemoryError as e:
            print("OOM", type(e).__name__)
    """))
    assert "OOM OutOfMemoryError" in out
