"""The caching-allocator model against sequences derived by hand from torch_npu's NPUCachingAllocator.cpp
(the rules quoted in each test); pure Python, no device."""
from __future__ import annotations

import pytest

from ascend_compat.knowledge.alloc_conf import parse
from ascend_compat.simulator.caching_allocator import DeviceAllocator, OutOfMemory

MiB = 1 << 20


def make(conf: str = "", capacity=None, version=None) -> DeviceAllocator:
    return DeviceAllocator(parse(conf, version), capacity=capacity)


def test_round_size_pads_32_then_512_blocks():
    a = make()
    assert [a.round_size(n) for n in (1, 480, 481, 1000, 4096)] == [512, 512, 1024, 1536, 4608]


def test_roundup_power2_divisions():
    # size + 32 lies in [1 MiB, 2 MiB): 4 divisions of 256 KiB -> the next multiple of 256 KiB
    a = make("roundup_power2_divisions:4")
    assert a.round_size(1_200_000) == 1_310_720
    assert a.round_size(1000) == 1536  # at most 512 * divisions: plain 512-byte rounding
    # per interval: [256:1,>:8]; 300 MiB lies in the 256 MiB interval (1 = off), 1100 MiB beyond it (8)
    b = make("roundup_power2_divisions:[256:1,>:8]")
    assert b.round_size(300 * MiB) == 300 * MiB + 512
    assert b.round_size(1100 * MiB) == 1152 * MiB


def test_small_requests_share_a_2mib_segment_and_split():
    a = make()
    x = a.malloc(1000)
    y = a.malloc(1000)
    assert a.allocated() == 2 * 1536 and a.reserved() == 2 * MiB
    s = a.memory_stats()
    assert s["segment.small_pool.current"] == 1 and s["inactive_split.small_pool.current"] == 1
    assert s["inactive_split_bytes.all.current"] == 2 * MiB - 2 * 1536
    a.free(x)
    a.free(y)  # merges with both neighbours back into one free 2 MiB block
    assert a.memory_stats()["inactive_split.all.current"] == 0
    a.empty_cache()
    assert a.reserved() == 0


def test_large_requests_20mib_segments_and_rounding_to_2mib():
    a = make()
    x = a.malloc(3 * MiB)  # 1 MiB < size < 10 MiB: a 20 MiB segment, split (more than 1 MiB remains)
    assert a.reserved() == 20 * MiB and x.size == 3 * MiB + 512
    y = a.malloc(17 * MiB)  # more than the 17 MiB - 512 left: a segment of the size rounded up to 2 MiB
    assert a.reserved() == 38 * MiB and y.size == 18 * MiB  # 1 MiB - 512 left: not split
    z = a.malloc(15 * MiB)  # best fit: the rest of the first segment
    assert a.reserved() == 38 * MiB and z.addr == x.addr + x.size
    a.free(z)
    a.free(x)
    a.empty_cache()  # the 20 MiB segment is whole again and released; the 18 MiB one is in use
    assert a.reserved() == 18 * MiB
    a.free(y)
    a.empty_cache()
    assert a.reserved() == 0 and a.memory_stats()["num_device_free"] == 2


def test_large_block_not_split_when_at_most_1mib_remains():
    a = make()
    x = a.malloc(19 * MiB)  # 19 MiB + 512 in a 20 MiB segment: 1 MiB - 512 remains -> no split
    assert x.size == 20 * MiB
    assert a.allocated() == 20 * MiB and a.memory_stats()["requested_bytes.all.current"] == 19 * MiB


def test_best_fit_takes_the_smallest_block_that_fits():
    a = make()
    blocks = [a.malloc(n * MiB) for n in (11, 15, 13)]  # segments of 12, 16 and 14 MiB
    assert a.reserved() == 42 * MiB
    addrs = [b.addr for b in blocks]
    for b in blocks:
        a.free(b)
    c = a.malloc(12 * MiB + MiB // 2)  # fits the 14 and 16 MiB segments: the smaller one
    assert c.addr == addrs[2]


def test_max_split_size_keeps_oversize_blocks_whole():
    a = make("max_split_size_mb:25")
    big = a.malloc(30 * MiB)  # oversize: a 32 MiB segment (30 MiB + 512 rounded up to 2 MiB)
    a.free(big)
    small = a.malloc(5 * MiB)  # may not take the oversize block: a new 20 MiB segment
    assert a.reserved() == 52 * MiB and small.addr != big.addr
    assert a.memory_stats()["oversize_segments.current"] == 1
    # an oversize request reuses a cached oversize block only if it wastes < max_non_split_rounding (20 MiB)
    again = a.malloc(28 * MiB)
    assert again.addr == big.addr and a.reserved() == 52 * MiB


def test_oom_frees_cached_blocks_then_raises_with_torch_npu_numbers():
    a = make(capacity=64 * MiB)
    keep = a.malloc(30 * MiB)  # a 32 MiB segment
    tmp = a.malloc(20 * MiB)  # a 22 MiB segment, freed: cached
    a.free(tmp)
    again = a.malloc(30 * MiB)  # 54 + 32 > 64: release_cached_blocks frees the 22 MiB, the retry fits
    assert a.reserved() == 64 * MiB and a.memory_stats()["num_alloc_retries"] == 1
    with pytest.raises(OutOfMemory) as e:
        a.malloc(8 * MiB)  # a 20 MiB segment: 84 > 64
    assert str(e.value) == (
        "NPU out of memory. Tried to allocate 20.00 MiB (NPU 0; 64.00 MiB total capacity; 60.00 MiB already "
        "allocated; 60.00 MiB current active; 0 bytes free; 64.00 MiB reserved in total by PyTorch).If reserved "
        "memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.")
    assert a.memory_stats()["num_ooms"] == 1
    assert keep.allocated and again.allocated


def test_oom_wording_before_torch_npu_2_10():
    a = make(capacity=MiB, version="2.6.0")
    with pytest.raises(OutOfMemory) as e:
        a.malloc(100)
    assert "reserved in total by PyTorch) If reserved memory is >> allocated memory" in str(e.value)


def test_fragmentation_fails_where_allocated_memory_would_fit():
    # nine 6 MiB tensors, three per 20 MiB segment; freeing every other one leaves 30 MiB free in holes of
    # at most 8 MiB: a 12 MiB request needs a new 14 MiB segment and fails with 36 MiB allocated of 64
    a = make(capacity=64 * MiB)
    blocks = [a.malloc(6 * MiB) for _ in range(9)]
    assert a.reserved() == 60 * MiB
    for b in blocks[::2]:
        a.free(b)
    with pytest.raises(OutOfMemory, match="Tried to allocate 14.00 MiB"):
        a.malloc(12 * MiB)
    assert a.allocated() < 25 * MiB


def test_expandable_segments_grow_one_segment():
    a = make("expandable_segments:True")
    a.malloc(3 * MiB)  # maps one 20 MiB page
    assert a.reserved() == 20 * MiB
    b = a.malloc(25 * MiB)  # 17 MiB free after the first block + one more page: the segment grows to 40 MiB
    assert a.reserved() == 40 * MiB
    a.free(b)
    a.empty_cache()  # the free whole page at the end is unmapped again
    assert a.reserved() == 20 * MiB
    plain = make()
    plain.malloc(3 * MiB)
    plain.malloc(25 * MiB)
    assert plain.reserved() == 46 * MiB


def test_garbage_collection_frees_old_cached_segments_under_a_fraction():
    def run(conf):
        a = make(conf)
        a.allowed = 100 * MiB
        a.free(a.malloc(60 * MiB))  # a 62 MiB segment, cached
        a.malloc(70 * MiB)  # no fit; a 72 MiB segment would exceed the 100 MiB allowed
        return a.reserved(), a.memory_stats()["num_alloc_retries"]
    # reserved 62 MiB > 50 % of 100: the collector frees the cached segment before trying (no retry)
    assert run("garbage_collection_threshold:0.5") == (72 * MiB, 0)
    assert run("") == (72 * MiB, 1)  # without it the failed attempt frees the cache and retries


def test_stats_peaks_and_reset():
    a = make()
    x = a.malloc(3 * MiB)
    a.free(x)
    s = a.memory_stats()
    assert s["allocated_bytes.all.peak"] == 3 * MiB + 512 and s["allocated_bytes.all.current"] == 0
    assert s["reserved_bytes.large_pool.peak"] == 20 * MiB and s["allocation.all.allocated"] == 1
    a.reset_peak()
    assert a.memory_stats()["allocated_bytes.all.peak"] == 0
