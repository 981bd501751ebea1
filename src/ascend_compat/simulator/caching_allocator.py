"""torch_npu's NPU caching allocator as a pure-Python model: sizes and addresses only, no storage.

A transcription of ``DeviceCachingAllocator`` in Ascend/pytorch ``torch_npu/csrc/core/npu/NPUCachingAllocator.cpp``
(the rules, not the code), driven by :class:`~ascend_compat.knowledge.alloc_conf.AllocConf`:

* ``round_size``: +32 bytes of padding (torch_npu adds them on every SoC before Ascend950), then 512-byte
  blocks, or the next power-of-two division when ``roundup_power2_divisions`` applies;
* pools: requests up to 1 MiB (``kSmallSize``) come from the small pool, carved out of 2 MiB segments;
  larger ones from the large pool: 20 MiB segments (``large_segment_size``) for requests under 10 MiB,
  else the request rounded up to 2 MiB;
* best fit: the smallest cached free block of the same stream that is large enough (ties: lowest address);
  no oversize block (>= ``max_split_size``) for a smaller request, and an oversize request takes a
  cached block only if it wastes less than ``max_non_split_rounding_size``;
* splitting: a small-pool block (or any block with expandable segments) is split when >= 512 bytes remain;
  a large-pool block when more than 1 MiB remains and the request is under ``max_split_size``; freed
  blocks merge with free neighbours of the same segment;
* on a miss: garbage collection (``garbage_collection_threshold``, with a per-process fraction set), a
  new segment, then freeing oversize cached blocks, then freeing every unsplit cached block and retrying
  (``num_alloc_retries``); failing that, torch_npu's ``NPU out of memory. Tried to allocate ...`` with
  the segment size it tried, the device total, allocated/active/free/reserved bytes;
* ``expandable_segments:True``: one growing segment per stream and pool, mapped in 2 MiB (small) or
  ``large_segment_size`` (large) pages; ``empty_cache`` unmaps free pages;
* ``empty_cache``: releases every cached segment that is wholly free.

Statistics follow c10's ``DeviceStats`` (current/peak/allocated/freed for all/small_pool/large_pool).
Addresses are virtual: each new segment gets the next free range, so among equal-sized free blocks
the older segment's wins, as it usually does on the device. Not modelled: events of blocks used on
other streams (the simulator is synchronous), graph-capture private pools, the op workspace allocator.
"""
from __future__ import annotations

import bisect
from typing import Dict, List, Optional

from ascend_compat.knowledge.alloc_conf import AllocConf

MIN_BLOCK = 512  # kMinBlockSize
SMALL_SIZE = 1 << 20  # kSmallSize
SMALL_BUFFER = 2 << 20  # kSmallBuffer
MIN_LARGE_ALLOC = 10 << 20  # kMinLargeAlloc
ROUND_LARGE = 2 << 20  # kRoundLarge
PAD = 32  # AddPadSize() before Ascend950

POOLS = ("all", "small_pool", "large_pool")
_STATS = ("allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
          "active_bytes", "inactive_split_bytes", "requested_bytes")


class OutOfMemory(Exception):
    """The allocator could not find or reserve memory; ``str()`` is torch_npu's message."""

    def __init__(self, message: str, alloc_size: int):
        super().__init__(message)
        self.alloc_size = alloc_size


def format_size(size: int) -> str:
    """c10's ``format_size``: bytes up to 1 KiB, then KiB/MiB/GiB with two decimals."""
    if size <= 1024:
        return f"{size} bytes"
    if size <= 1048576:
        return f"{size / 1024.0:.2f} KiB"
    if size <= 1073741824:
        return f"{size / 1048576.0:.2f} MiB"
    return f"{size / 1073741824.0:.2f} GiB"


class _Stat:
    __slots__ = ("current", "peak", "allocated", "freed")

    def __init__(self):
        self.current = self.peak = self.allocated = self.freed = 0

    def update(self, amount: int) -> None:
        self.current += amount
        if amount > 0:
            self.allocated += amount
            if self.current > self.peak:
                self.peak = self.current
        elif amount < 0:
            self.freed -= amount


class Block:
    """A range of device memory: cached (free) or handed out."""

    __slots__ = ("size", "addr", "stream", "small", "allocated", "requested", "prev", "next", "mapped",
                 "segment", "gc_count")

    def __init__(self, size: int, addr: int, stream: int, small: bool, segment=None):
        self.size = size
        self.addr = addr
        self.stream = stream
        self.small = small
        self.allocated = False
        self.requested = 0
        self.prev: Optional[Block] = None
        self.next: Optional[Block] = None
        self.mapped = True
        self.segment = segment  # the _Expandable it belongs to, or None
        self.gc_count = 0

    def is_split(self) -> bool:
        return self.prev is not None or self.next is not None

    def key(self):
        return (self.stream, self.size, self.addr)


class _Pool:
    """Cached free blocks ordered by (stream, size, address); unmapped expandable ranges by address."""

    __slots__ = ("small", "keys", "blocks", "unmapped")

    def __init__(self, small: bool):
        self.small = small
        self.keys: List[tuple] = []
        self.blocks: List[Block] = []
        self.unmapped: List[tuple] = []  # (stream, addr, block)

    def insert(self, b: Block) -> None:
        k = b.key()
        i = bisect.bisect_left(self.keys, k)
        self.keys.insert(i, k)
        self.blocks.insert(i, b)

    def remove(self, b: Block) -> None:
        i = bisect.bisect_left(self.keys, b.key())
        if i < len(self.keys) and self.blocks[i] is b:
            del self.keys[i]
            del self.blocks[i]

    def contains(self, b: Block) -> bool:
        i = bisect.bisect_left(self.keys, b.key())
        return i < len(self.keys) and self.blocks[i] is b

    def lower_bound(self, stream: int, size: int) -> int:
        return bisect.bisect_left(self.keys, (stream, size, -1))

    def add_unmapped(self, b: Block) -> None:
        bisect.insort(self.unmapped, (b.stream, b.addr, id(b), b))

    def drop_unmapped(self, b: Block) -> None:
        i = bisect.bisect_left(self.unmapped, (b.stream, b.addr, id(b)))
        if i < len(self.unmapped) and self.unmapped[i][3] is b:
            del self.unmapped[i]


class _Expandable:
    """One expandable segment: a large virtual range mapped page by page."""

    __slots__ = ("base", "page", "pages", "mapped")

    def __init__(self, base: int, page: int, pages: int):
        self.base, self.page, self.pages = base, page, pages
        self.mapped = [False] * pages


class DeviceAllocator:
    """The caching allocator of one device.

    ``capacity``: device memory in bytes (None = unlimited: a new segment never fails); ``allowed``:
    the per-process limit ``set_per_process_memory_fraction`` sets (None = none).
    """

    def __init__(self, conf: AllocConf, device: int = 0, capacity: Optional[int] = None,
                 allowed: Optional[int] = None):
        self.conf = conf
        self.device = device
        self.capacity = capacity
        self.allowed = allowed
        #: the device total the OOM message names when no capacity is set (the SoC's HBM)
        self.device_total: Optional[int] = None
        self.small = _Pool(True)
        self.large = _Pool(False)
        self.stats: Dict[str, List[_Stat]] = {name: [_Stat(), _Stat(), _Stat()] for name in _STATS}
        self.oversize_allocations = _Stat()
        self.oversize_segments = _Stat()
        self.num_alloc_retries = 0
        self.num_ooms = 0
        self.num_device_alloc = 0
        self.num_device_free = 0
        self.num_sync_all_streams = 0
        self.total_reserved = 0  # total_allocated_memory: bytes obtained from the device
        self._next_addr = 1 << 32
        self._segments: List[_Expandable] = []

    # ------------------------------------------------------------------ sizes

    def round_size(self, size: int) -> int:
        """The block size torch_npu uses for a request of ``size`` bytes."""
        size += PAD
        if size < MIN_BLOCK:
            return MIN_BLOCK
        divisions = self.conf.divisions(size)
        if divisions > 1 and size > MIN_BLOCK * divisions:
            return _roundup_power2_next_division(size, divisions)
        return MIN_BLOCK * ((size + MIN_BLOCK - 1) // MIN_BLOCK)

    def allocation_size(self, size: int) -> int:
        """The segment size torch_npu asks the device for when no cached block fits ``size``."""
        if self.conf.page_size_1g and size > SMALL_SIZE:
            return (1 << 30) * ((size + (1 << 30) - 1) // (1 << 30))
        if size <= SMALL_SIZE:
            return SMALL_BUFFER
        if size < MIN_LARGE_ALLOC:
            return self.conf.large_segment_size
        return ROUND_LARGE * ((size + ROUND_LARGE - 1) // ROUND_LARGE)

    # ------------------------------------------------------------------ statistics

    def _update(self, name: str, small: bool, amount: int) -> None:
        s = self.stats[name]
        s[0].update(amount)
        s[1 if small else 2].update(amount)

    def allocated(self) -> int:
        return self.stats["allocated_bytes"][0].current

    def reserved(self) -> int:
        return self.stats["reserved_bytes"][0].current

    def memory_stats(self) -> dict:
        """``torch.npu.memory_stats`` keys (flat, unsorted)."""
        out = {}
        for name, per_pool in self.stats.items():
            for pool, stat in zip(POOLS, per_pool):
                for field in ("current", "peak", "allocated", "freed"):
                    out[f"{name}.{pool}.{field}"] = getattr(stat, field)
        for name, stat in (("oversize_allocations", self.oversize_allocations),
                           ("oversize_segments", self.oversize_segments)):
            for field in ("current", "peak", "allocated", "freed"):
                out[f"{name}.{field}"] = getattr(stat, field)
        out["num_alloc_retries"] = self.num_alloc_retries
        out["num_ooms"] = self.num_ooms
        out["num_device_alloc"] = self.num_device_alloc
        out["num_device_free"] = self.num_device_free
        out["num_sync_all_streams"] = self.num_sync_all_streams
        out["max_split_size"] = -1 if not self.conf.split_limited else self.conf.max_split_size
        return out

    def reset_peak(self) -> None:
        for per_pool in self.stats.values():
            for s in per_pool:
                s.peak = s.current
        for s in (self.oversize_allocations, self.oversize_segments):
            s.peak = s.current

    def reset_accumulated(self) -> None:
        for per_pool in self.stats.values():
            for s in per_pool:
                s.allocated = s.freed = 0
        for s in (self.oversize_allocations, self.oversize_segments):
            s.allocated = s.freed = 0
        self.num_alloc_retries = self.num_ooms = 0

    # ------------------------------------------------------------------ malloc

    def malloc(self, nbytes: int, stream: int = 0) -> Block:
        """Hand out a block for a request of ``nbytes`` (> 0); raises :class:`OutOfMemory`."""
        size = self.round_size(nbytes)
        small = size <= SMALL_SIZE
        pool = self.small if small else self.large
        alloc_size = self.allocation_size(size)
        block = self._get_free_block(pool, stream, size)
        if block is None:
            if self.allowed is not None and self.conf.garbage_collection_threshold > 0.0:
                self._garbage_collect()
            block = self._alloc_block(pool, stream, size, alloc_size)
            if block is None:
                block = self._release_available(pool, stream, size) and \
                    self._alloc_block(pool, stream, size, alloc_size)
            if not block:
                self.num_sync_all_streams += 1
                self.release_cached()
                self.num_alloc_retries += 1
                block = self._alloc_block(pool, stream, size, alloc_size)
        if not block:
            self.num_ooms += 1
            raise OutOfMemory(self.oom_message(alloc_size), alloc_size)
        block = self._align(block, pool, size)
        return self._hand_out(block, pool, size, nbytes)

    def oom_message(self, alloc_size: int) -> str:
        """torch_npu's OOM text for a failed request of segment size ``alloc_size`` (the emulated
        version's wording: before 2.10 the last sentence follows ``) ``, from 2.10 ``).``)."""
        total = self.capacity if self.capacity is not None else (self.device_total or 0)
        free = max(0, total - self.total_reserved)
        allowed = f"{format_size(self.allowed)} allowed; " if self.allowed is not None else ""
        tail = ").If reserved" if self.conf.era == "2.10" else ") If reserved"
        return (f"NPU out of memory. Tried to allocate {format_size(alloc_size)} (NPU {self.device}; "
                f"{format_size(total)} total capacity; {format_size(self.allocated())} already allocated; "
                f"{format_size(self.stats['active_bytes'][0].current)} current active; {format_size(free)} free; "
                f"{allowed}{format_size(self.reserved())} reserved in total by PyTorch{tail} memory is >> "
                "allocated memory try setting max_split_size_mb to avoid fragmentation.")

    def _get_free_block(self, pool: _Pool, stream: int, size: int) -> Optional[Block]:
        conf = self.conf
        if self.allowed is not None and conf.garbage_collection_threshold > 0.0:
            for b in pool.blocks:
                b.gc_count += 1
        i = pool.lower_bound(stream, size)
        if i >= len(pool.blocks) or pool.blocks[i].stream != stream:
            return None
        b = pool.blocks[i]
        if b.segment is not None:
            if conf.expandable_segments:
                def room(x):
                    return x.size + (x.next.size if x.next is not None and not x.next.mapped else 0)
                j = i + 1
                while (b.segment is not None and j < len(pool.blocks) and pool.blocks[j].stream == stream
                       and room(pool.blocks[j]) < room(b)):
                    i, b = j, pool.blocks[j]
                    j += 1
            else:
                while i < len(pool.blocks) and pool.blocks[i].segment is not None and pool.blocks[i].stream == stream:
                    i += 1
                if i >= len(pool.blocks) or pool.blocks[i].stream != stream:
                    return None
                b = pool.blocks[i]
        if size < conf.max_split_size <= b.size:
            return None
        if size >= conf.max_split_size and b.size >= size + conf.max_non_split_rounding_size:
            return None
        b.gc_count = 0
        pool.remove(b)
        return b

    def _alloc_block(self, pool: _Pool, stream: int, size: int, alloc_size: int) -> Optional[Block]:
        if self.allowed is not None and self.total_reserved + alloc_size > self.allowed:
            return None
        if self.conf.expandable_segments:
            return self._alloc_expandable(pool, stream, size)
        if self.capacity is not None and self.total_reserved + alloc_size > self.capacity:
            return None
        self.total_reserved += alloc_size
        b = Block(alloc_size, self._take_addresses(alloc_size), stream, pool.small)
        self._update("segment", pool.small, 1)
        self._update("reserved_bytes", pool.small, alloc_size)
        if alloc_size >= self.conf.max_split_size:
            self.oversize_segments.update(1)
        self.num_device_alloc += 1
        return b

    def _take_addresses(self, size: int) -> int:
        addr = self._next_addr
        self._next_addr += ((size + ROUND_LARGE - 1) // ROUND_LARGE) * ROUND_LARGE
        return addr

    def _release_available(self, pool: _Pool, stream: int, size: int) -> bool:
        """``release_available_cached_blocks``: free oversize cached blocks, enough for ``size``."""
        limit = self.conf.max_split_size
        if not self.conf.split_limited:
            return False
        want = max(size, limit)
        i = pool.lower_bound(stream, want)
        if i >= len(pool.blocks) or pool.blocks[i].stream != stream:
            if i == 0:
                return False
            released = 0
            i -= 1
            while released < want and i >= 0 and pool.blocks[i].size >= limit and pool.blocks[i].stream == stream:
                b = pool.blocks[i]
                released += b.size
                self._release_block(b, pool)
                i -= 1
            return released >= want
        self._release_block(pool.blocks[i], pool)
        return True

    def _garbage_collect(self) -> None:
        threshold = int(self.conf.garbage_collection_threshold * self.allowed)
        if self.total_reserved <= threshold:
            return
        target = self.total_reserved - threshold
        candidates = [b for b in self.large.blocks if not b.is_split()]
        if not candidates:
            return
        total_age = float(sum(b.gc_count for b in candidates))
        count = len(candidates)
        reclaimed, freed = 0, True
        while reclaimed < target and freed and count > 0:
            age = total_age / count
            freed = False
            for b in list(self.large.blocks):
                if not b.is_split() and b.gc_count >= age:
                    freed = True
                    reclaimed += b.size
                    total_age -= b.gc_count
                    count -= 1
                    self._release_block(b, self.large)

    def _align(self, block: Block, pool: _Pool, size: int) -> Block:
        """torch_npu aligns large blocks of expandable segments to ``base_addr_aligned_kb``."""
        align = self.conf.base_addr_aligned_size
        if not (size >= ROUND_LARGE and self.conf.expandable_segments and align and block.addr % align):
            return block
        offset = align - block.addr % align
        if offset + size > block.size:
            return block
        rest = Block(block.size - offset, block.addr + offset, block.stream, block.small, block.segment)
        rest.next = block.next
        if rest.next is not None:
            rest.next.prev = rest
        rest.prev = block
        block.next = rest
        block.size = offset
        pool.insert(block)
        return rest

    def _hand_out(self, block: Block, pool: _Pool, size: int, requested: int) -> Block:
        remaining = block.size - size
        if pool.small or self.conf.expandable_segments:
            split = remaining >= MIN_BLOCK
        else:
            split = size < self.conf.max_split_size and remaining > SMALL_SIZE
        already_split = block.is_split()
        if split:
            rest = block
            block = Block(size, rest.addr, rest.stream, rest.small, rest.segment)
            block.prev = rest.prev
            if block.prev is not None:
                block.prev.next = block
            block.next = rest
            rest.prev = block
            rest.addr += size
            rest.size -= size
            pool.insert(rest)
            if already_split and block.segment is None:
                self._update("inactive_split_bytes", pool.small, -block.size)
            elif block.segment is None:
                self._update("inactive_split_bytes", pool.small, rest.size)
                self._update("inactive_split", pool.small, 1)
        elif already_split and block.segment is None:
            self._update("inactive_split_bytes", pool.small, -block.size)
            self._update("inactive_split", pool.small, -1)
        block.allocated = True
        block.requested = requested
        for name, amount in (("allocation", 1), ("allocated_bytes", block.size), ("active", 1),
                             ("active_bytes", block.size), ("requested_bytes", requested)):
            self._update(name, pool.small, amount)
        if block.size >= self.conf.max_split_size:
            self.oversize_allocations.update(1)
        return block

    # ------------------------------------------------------------------ free

    def free(self, block: Block) -> None:
        """Return ``block`` to the cache (it merges with free neighbours of its segment)."""
        pool = self.small if block.small else self.large
        block.allocated = False
        self._update("allocation", pool.small, -1)
        self._update("allocated_bytes", pool.small, -block.size)
        if block.size >= self.conf.max_split_size:
            self.oversize_allocations.update(-1)
        original, requested = block.size, block.requested
        inactive_blocks = inactive_bytes = 0
        for other in (block.prev, block.next):
            merged = self._merge(block, other, pool)
            if merged:
                inactive_blocks -= 1
                inactive_bytes -= merged
        pool.insert(block)
        if block.is_split():
            inactive_blocks += 1
            inactive_bytes += block.size
        if block.segment is None:
            self._update("inactive_split", pool.small, inactive_blocks)
            self._update("inactive_split_bytes", pool.small, inactive_bytes)
        self._update("active", pool.small, -1)
        self._update("active_bytes", pool.small, -original)
        self._update("requested_bytes", pool.small, -requested)

    def _merge(self, dst: Block, src: Optional[Block], pool: _Pool) -> int:
        if src is None or src.allocated or dst.mapped != src.mapped:
            return 0
        if src.mapped:
            pool.remove(src)
        else:
            pool.drop_unmapped(src)
        if dst.prev is src:
            dst.addr = src.addr
            dst.prev = src.prev
            if dst.prev is not None:
                dst.prev.next = dst
        else:
            dst.next = src.next
            if dst.next is not None:
                dst.next.prev = dst
        dst.size += src.size
        return src.size

    # ------------------------------------------------------------------ release

    def release_cached(self) -> None:
        """``release_cached_blocks``: give every wholly free cached segment back (expandable: unmap free pages)."""
        for pool in (self.large, self.small):
            expandable = []
            for b in list(pool.blocks):
                if b.segment is not None:
                    expandable.append(b)
                elif b.prev is None and b.next is None:
                    self._release_block(b, pool)
            for b in expandable:
                self._unmap(b, pool)

    def empty_cache(self) -> None:
        """``torch.npu.empty_cache()``."""
        self.num_sync_all_streams += 1
        self.release_cached()

    def _release_block(self, b: Block, pool: _Pool) -> None:
        self.num_device_free += 1
        self.total_reserved -= b.size
        self._update("segment", pool.small, -1)
        self._update("reserved_bytes", pool.small, -b.size)
        if b.size >= self.conf.max_split_size:
            self.oversize_segments.update(-1)
        pool.remove(b)

    # ------------------------------------------------------------------ expandable segments

    def _page(self, pool: _Pool) -> int:
        return SMALL_BUFFER if pool.small else self.conf.large_segment_size

    def _alloc_expandable(self, pool: _Pool, stream: int, size: int) -> Optional[Block]:
        c = self._find_expandable(pool, stream, size)
        if not c.mapped and not self._map(c, min(c.size, size), pool):
            return None
        while c.size < size:
            nxt = c.next
            if nxt is None or not self._map(nxt, min(size - c.size, nxt.size), pool):
                return None
            c = nxt
        pool.remove(c)
        return c

    def _find_expandable(self, pool: _Pool, stream: int, size: int) -> Block:
        def free(b):
            return b is not None and not b.allocated

        def room(b):
            n = 0
            while n < size and free(b):
                n += b.size
                b = b.next
            return n >= size

        for s, _addr, _id, b in pool.unmapped:
            if s != stream:
                continue
            c = b.prev if free(b.prev) else b
            if room(c):
                return c
        page = self._page(pool)
        total = self.capacity if self.capacity is not None else 1 << 40
        pages = -(-(total + total // 8) // page)
        seg = _Expandable(self._take_addresses(page * pages), page, pages)
        self._segments.append(seg)
        c = Block(page * pages, seg.base, stream, pool.small, seg)
        c.mapped = False
        pool.add_unmapped(c)
        return c

    def _map(self, b: Block, size: int, pool: _Pool) -> bool:
        seg = b.segment
        first = (b.addr - seg.base) // seg.page
        last = -(-(b.addr + size - seg.base) // seg.page)
        nbytes = (last - first) * seg.page
        if self.capacity is not None and self.total_reserved + nbytes > self.capacity:
            return False
        for i in range(first, last):
            seg.mapped[i] = True
        pool.drop_unmapped(b)
        b.mapped = True
        if nbytes < b.size:
            rest = Block(b.size - nbytes, b.addr + nbytes, b.stream, b.small, seg)
            rest.mapped = False
            rest.prev, rest.next = b, b.next
            if b.next is not None:
                b.next.prev = rest
            b.next = rest
            pool.add_unmapped(rest)
            b.size = nbytes
        self._merge(b, b.prev, pool)
        self._merge(b, b.next, pool)
        pool.insert(b)
        self.total_reserved += nbytes
        self._update("reserved_bytes", pool.small, nbytes)
        self.num_device_alloc += 1
        return True

    def _unmap(self, b: Block, pool: _Pool) -> None:
        seg = b.segment
        first = -(-(b.addr - seg.base) // seg.page)
        last = (b.addr + b.size - seg.base) // seg.page
        if first >= last:
            return
        pool.remove(b)
        start = seg.base + first * seg.page
        nbytes = (last - first) * seg.page
        before = start - b.addr
        if before > 0:
            head = Block(before, b.addr, b.stream, b.small, seg)
            head.prev, head.next = b.prev, b
            if b.prev is not None:
                b.prev.next = head
            b.prev = head
            pool.insert(head)
        after = b.size - before - nbytes
        if after > 0:
            tail = Block(after, start + nbytes, b.stream, b.small, seg)
            tail.prev, tail.next = b, b.next
            if b.next is not None:
                b.next.prev = tail
            b.next = tail
            pool.insert(tail)
        b.addr, b.size, b.mapped = start, nbytes, False
        for i in range(first, last):
            seg.mapped[i] = False
        self._merge(b, b.prev, pool)
        self._merge(b, b.next, pool)
        pool.add_unmapped(b)
        self.total_reserved -= nbytes
        self._update("reserved_bytes", pool.small, -nbytes)
        self.num_device_free += 1


def _roundup_power2_next_division(size: int, divisions: int) -> int:
    if size & (size - 1) == 0:
        return size
    floor = 1 << (size.bit_length() - 1)
    step = floor >> (divisions.bit_length() - 1)
    if step == 0:
        return floor << 1
    base = size & ~(step - 1)
    return size if base == size else base + step
