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
        simulator.install(memory_capacity="4M")
        a = torch.empty(100_000, device="npu")  # 400 KB: a block of the first 2 MiB small segment
        print("reserved", torch.npu.memory_reserved())
        try:
            torch.empty(800_000, device="npu")  # 3.2 MB: a new 20 MiB large segment, over 4 MiB
        except torch.OutOfMemoryError as e:
            print("OOM|" + str(e))
        print("ooms", torch.npu.memory_stats()["num_ooms"], "retries", torch.npu.memory_stats()["num_alloc_retries"])
        del a
        b = torch.empty(200_000, device="npu")  # 800 KB: fits the cached small segment
        print("after free ok", b.shape[0], torch.npu.memory_reserved())
    """))
    msg = out.split("OOM|", 1)[1].splitlines()[0]
    # 400000 B + 32 rounded to 512 = 400384 B = 391.00 KiB; torch_npu names the segment it tried (20 MiB)
    assert msg == ("NPU out of memory. Tried to allocate 20.00 MiB (NPU 0; 4.00 MiB total capacity; "
                   "391.00 KiB already allocated; 391.00 KiB current active; 2.00 MiB free; "
                   "2.00 MiB reserved in total by PyTorch).If reserved memory is >> allocated memory try "
                   "setting max_split_size_mb to avoid fragmentation.")
    assert "reserved 2097152" in out and "ooms 1 retries 1" in out
    assert "after free ok 200000 2097152" in out


def test_capacity_applies_to_op_outputs():
    out = check(run_python("""
        import torch
        from ascend_compat import simulator
        simulator.install(memory_capacity="3M")
        a = torch.ones(200_000, device="npu")  # 800 KB blocks: two fit one 2 MiB segment
        b = a * 2
        print("reserved", torch.npu.memory_reserved())
        try:
            c = a + b  # a third needs a second segment: 4 MiB > 3 MiB
        except torch.OutOfMemoryError as e:
            print("OOM", type(e).__name__)
    """))
    assert "reserved 2097152" in out and "OOM OutOfMemoryError" in out


def test_reserved_caches_and_empty_cache_releases():
    out = check(run_python("""
        import torch
        from ascend_compat import simulator
        simulator.install()
        print("start", torch.npu.memory_reserved())
        x = torch.empty(3 << 20, dtype=torch.uint8, device="npu")
        print("one", torch.npu.memory_allocated(), torch.npu.memory_reserved())
        del x
        print("freed", torch.npu.memory_allocated(), torch.npu.memory_reserved())
        torch.npu.empty_cache()
        print("emptied", torch.npu.memory_reserved(), torch.npu.max_memory_reserved())
    """))
    # 3 MiB + 32 B -> 3 MiB + 512 B in a 20 MiB large segment, cached after the free until empty_cache
    assert "start 0" in out
    assert f"one {(3 << 20) + 512} {20 << 20}" in out
    assert f"freed 0 {20 << 20}" in out
    assert f"emptied 0 {20 << 20}" in out


def test_alloc_conf_is_read_from_the_environment():
    env = {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"}
    out = check(run_python("""
        import torch
        from ascend_compat import simulator
        simulator.install()
        x = torch.empty(3 << 20, dtype=torch.uint8, device="npu")
        y = torch.empty(25 << 20, dtype=torch.uint8, device="npu")
        print("reserved", torch.npu.memory_reserved() >> 20)
    """, env=env))
    # one growing segment of 20 MiB pages: 3 MiB + 25 MiB fit in two pages (40 MiB); without it the
    # 25 MiB request would need a 26 MiB segment of its own (46 MiB)
    assert "reserved 40" in out
    bad = run_python("""
        import torch
        from ascend_compat import simulator
        simulator.install()
        torch.empty(1, device="npu")
    """, env={"PYTORCH_NPU_ALLOC_CONF": "max_split_size_mb:10"})
    assert bad.returncode != 0 and "max_split_size_mb too small, must be >= 20" in bad.stderr
