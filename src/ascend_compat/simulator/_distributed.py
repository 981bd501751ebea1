"""The simulated ``hccl`` distributed backend: collectives on npu tensors between processes.

:func:`register_hccl` registers backend ``"hccl"`` for device type ``npu`` exactly as
torch_npu 2.14 does (``Backend.register_backend("hccl", creator, extended_api=True,
devices=["npu"])``, before anything else claims ``npu``, so that since torch 2.8
``Backend.default_device_backend_map["npu"] == "hccl"`` and ``init_process_group()`` with
no backend picks it), and adds ``torch.distributed.is_hccl_available`` as torch_npu does.

How it works: the creator returns :class:`ProcessGroupHCCL`, a Python subclass of
``torch.distributed.ProcessGroup`` (torch replaces its own process group with it, as for
any Python process group). It owns a ``ProcessGroupGloo`` on a ``PrefixStore`` of the
rendezvous store. npu tensors live in host memory, so each collective runs gloo on
zero-copy host aliases (``_memory.host_alias``) and the result lands in the npu tensors
themselves. Collectives complete before they return (the work objects are already
completed, ``async_op=True`` included); point-to-point ``send``/``recv`` return gloo's
own work so that ``isend``/``irecv`` pairs cannot deadlock. A collective hands gloo aliases that do
not own the memory (``_memory.borrowed_host_alias``): gloo's worker thread drops a finished work's
tensors when it gets to it, and an owning alias would release the npu storage then, after or before
the script's next allocations depending on thread timing (peaks differed between runs by a freed
buffer: a DDP bucket, an FSDP2 all-gather output). The npu tensors of a collective that fails
(a timeout) are kept alive for good, as gloo may still use their memory; ``send``/``recv`` keep
owning aliases (their work outlives the call).

Faithful to torch_npu's HCCL where it shows:
- ``ReduceOp.AVG`` works (HCCL sums then divides; gloo has no AVG, so the same is done
  here); ``SUM`` on bool tensors is a logical or; ``BAND``/``BOR``/``BXOR`` raise
  "Cannot use ReduceOp.<op> with HCCL" with torch_npu's DIST error suffix; other ops
  (``PREMUL_SUM``) raise "Unhandled ReduceOp".
- CPU tensors are refused with torch's "No backend type associated with device type cpu"
  (as with a real hccl-only group) unless the group was created with a backend string
  that maps ``cpu`` too (``"cpu:gloo,npu:hccl"``); then they go through gloo.
- Tensors must be npu and dense ("Tensors must be NPU and dense"), and contiguous in their
  suggested memory format ("Tensors must be contiguous").

HCCL's own behaviour (``_hccl_comm``): the job's HCCL environment is read and refused as torch_npu and
HCCL refuse it when the communicator is created (first collective); collectives are checked for equal
arguments across ranks (EI0005), time out after ``HCCL_EXEC_TIMEOUT`` with torch_npu's 507048/EI0002
error naming lost or stuck peers, and write HCCL's plog lines; injected collective faults
(``simulator.faults``, ``c10d::<op>``) apply before each collective.

Limits: no timing or overlap of communication with compute (everything is synchronous);
functional collectives (``torch.distributed._functional_collectives``, DTensor under
torch.compile) and ``ProcessGroup`` splitting are not simulated; data types are not
checked against HCCL's per-collective lists.
"""
from __future__ import annotations

import functools
import threading
from datetime import timedelta
from typing import Any, List, Sequence

import torch
import torch.distributed as dist
from torch.distributed import ReduceOp

from ascend_compat.simulator import _host

__all__ = ["register_hccl", "is_hccl_available", "ProcessGroupHCCL"]

_STORE_PREFIX = "ascend_compat_sim_hccl"
_UNSUPPORTED_OPS = {ReduceOp.BAND: "BAND", ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}
_GLOO_OPS = (ReduceOp.SUM, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX)
#: the npu tensors handed to gloo by the running collective of this thread (None outside one)
_lent = threading.local()
#: the npu tensors of collectives that failed: gloo may still read or write their memory
_ABANDONED: List[torch.Tensor] = []


def is_hccl_available() -> bool:
    """True when backend ``hccl`` is registered (torch_npu's definition)."""
    return "hccl" in dist.Backend.backend_list


def register_hccl() -> None:
    """Register the simulated ``hccl`` backend for ``npu`` and ``dist.is_hccl_available``.

    Idempotent. Raises RuntimeError when torch was built without distributed or gloo.
    """
    if not dist.is_available():
        raise RuntimeError(
            "the simulated hccl backend needs torch.distributed, which this torch build lacks"
        )
    dist.is_hccl_available = is_hccl_available
    if "hccl" in dist.Backend.backend_list and getattr(dist.Backend, "HCCL", None) == "hccl":
        plugin = dist.Backend._plugins.get("HCCL")
        if plugin is not None and plugin.creator_fn is _create_hccl:
            return
    dist.Backend.register_backend("hccl", _create_hccl, extended_api=True, devices=["npu"])


def _create_hccl(dist_backend_opts: Any, pg_options: Any) -> "ProcessGroupHCCL":
    # torch calls this with c10d's DistributedBackendOptions (extended_api=True).
    if not dist.is_gloo_available():
        raise RuntimeError(
            "the simulated hccl backend runs on gloo, and this torch build has no gloo"
        )
    return ProcessGroupHCCL(
        dist_backend_opts.store,
        dist_backend_opts.group_rank,
        dist_backend_opts.group_size,
        dist_backend_opts.timeout,
        world=not list(getattr(dist_backend_opts, "global_ranks_in_group", []) or []),
    )


def _dist_error(code: str) -> str:
    from ascend_compat.simulator import _error_code

    return _error_code.cpp_error("DIST", code)


def _completed(result: Any) -> Any:
    """A finished ``Work`` whose future holds ``result``."""
    devices = _devices_of(result)
    fut = torch.futures.Future(devices=devices) if devices else torch.futures.Future()
    fut.set_result(result)
    return torch._C._distributed_c10d._create_work_from_future(fut)


def _devices_of(result: Any) -> List[str]:
    found = set()
    stack = [result]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            if item.device.type == "npu":
                found.add(str(item.device))
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return sorted(found)


def _dense(t: torch.Tensor) -> bool:
    """Contiguous in some memory format (torch's ``suggest_memory_format`` check, from Python)."""
    if t.is_contiguous():
        return True
    if t.dim() == 4:
        return t.is_contiguous(memory_format=torch.channels_last)
    if t.dim() == 5:
        return t.is_contiguous(memory_format=torch.channels_last_3d)
    return False


def _collective(op: str, c10d: str, pick):
    """Run the decorated collective as HCCL op ``op`` (torch's ``c10d`` op name ``c10d``); ``pick(*args)``
    gives the tensor(s) whose element count and dtype HCCL checks across ranks."""
    def decorate(method):
        @functools.wraps(method)
        def run(self, *args, **kwargs):
            picked = pick(*args) if pick is not None else None
            tensors = [t for t in (picked if isinstance(picked, (list, tuple)) else [picked])
                       if isinstance(t, torch.Tensor)]
            count = sum(t.numel() for t in tensors)
            dtype = tensors[0].dtype if tensors else None
            outer, lent = getattr(_lent, "tensors", None), []
            _lent.tensors = lent
            try:
                return self._comm.run(op, c10d, count, dtype, lambda: method(self, *args, **kwargs))
            except BaseException:
                _ABANDONED.extend(lent)
                raise
            finally:
                _lent.tensors = outer
        return run
    return decorate


class _HCCLOptions:
    """``ProcessGroupHCCL.Options``: the fields torch_npu's options object carries.

    Accepted and kept for code that builds or inspects them (``pg_options=``, profilers); the
    simulated group does not act on them (there is no stream priority or HCCL buffer to tune).
    """

    def __init__(self, is_high_priority_stream: bool = False) -> None:
        self.is_high_priority_stream = is_high_priority_stream
        self._timeout = timedelta(minutes=30)
        self.global_ranks_in_group: list = []
        self.group_id = ""
        self.hccl_config: dict = {}

    def __repr__(self) -> str:
        return f"ProcessGroupHCCL.Options(is_high_priority_stream={self.is_high_priority_stream})"


class ProcessGroupHCCL(dist.ProcessGroup):
    """Simulated HCCL process group: gloo on host aliases of npu tensors (see module doc)."""

    Options = _HCCLOptions

    def __init__(self, store: Any, rank: int, size: int, timeout: timedelta, world: bool = True) -> None:
        super().__init__(rank, size)
        self._rank = rank
        self._size = size
        prefix_store = dist.PrefixStore(_STORE_PREFIX, store)
        self._gloo = dist.ProcessGroupGloo(prefix_store, rank, size, timeout)
        # Makes pg._get_backend(npu) / pg._device_types answer (object collectives,
        # init_process_group(device_id=...)); collectives never reach it through C++,
        # every one is overridden below.
        self._register_backend(
            torch.device("npu"), dist.ProcessGroup.BackendType.CUSTOM, self._gloo
        )
        from ascend_compat.simulator._hccl_comm import Communicator

        self._comm = Communicator(prefix_store, rank, size, timeout, self._gloo, world)

    # --- identity -------------------------------------------------------------------
    def getBackendName(self) -> str:
        return "hccl"

    def __repr__(self) -> str:
        return f"ProcessGroupHCCL(simulated, rank={self._rank}, size={self._size})"

    # --- tensor checks and staging --------------------------------------------------
    def _cpu_allowed(self) -> bool:
        config = dist.distributed_c10d._world.pg_backend_config.get(self, "")
        return "cpu:" in str(config)

    def _host(self, t: torch.Tensor, need_contiguous: bool = True) -> torch.Tensor:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"expected a tensor, got {type(t).__name__}")
        if t.device.type == "cpu":
            if not self._cpu_allowed():
                raise RuntimeError("No backend type associated with device type cpu")
            host = t
        elif t.device.type != "npu" or t.is_sparse:
            raise RuntimeError(
                "Tensors must be NPU and dense" + _dist_error("TYPE")
            )
        else:
            from ascend_compat.simulator._memory import borrowed_host_alias, host_alias

            lent = getattr(_lent, "tensors", None)
            if lent is None:  # outside a collective (send/recv): gloo's work outlives the call
                host = host_alias(t)
            else:
                lent.append(t)
                host = borrowed_host_alias(t)
        if need_contiguous and not _dense(t):
            raise RuntimeError(
                "Tensors must be contiguous" + _dist_error("TYPE")
            )
        return host

    def _hosts(self, tensors: Sequence[torch.Tensor], need_contiguous: bool = True):
        return [self._host(t, need_contiguous) for t in tensors]

    # --- reductions -------------------------------------------------------------------
    def _check_op(self, op: Any) -> None:
        for unsupported, name in _UNSUPPORTED_OPS.items():
            if op == unsupported:
                raise RuntimeError(
                    f"Cannot use ReduceOp.{name} with HCCL"
                    + _dist_error("NOT_SUPPORT")
                )
        if op == ReduceOp.AVG or any(op == known for known in _GLOO_OPS):
            return
        raise RuntimeError("Unhandled ReduceOp" + _dist_error("NOT_FOUND"))

    def _allreduce_host(self, host: torch.Tensor, op: Any) -> None:
        """All-reduce a dense host tensor in place with HCCL semantics for ``op``."""
        self._check_op(op)
        buf = host
        gloo_op = op
        if host.dtype == torch.bool:
            buf = host.view(torch.uint8)
            if op == ReduceOp.SUM or op == ReduceOp.AVG:
                gloo_op = ReduceOp.MAX  # HCCL: sum on bool is a logical or
        elif op == ReduceOp.AVG:
            gloo_op = ReduceOp.SUM
        opts = dist.AllreduceOptions()
        opts.reduceOp = gloo_op
        self._comm.wait(self._gloo.allreduce([buf], opts))
        if op == ReduceOp.AVG and host.dtype != torch.bool:
            if host.is_floating_point() or host.is_complex():
                host.div_(self._size)
            else:
                host.copy_(torch.div(host, self._size, rounding_mode="floor"))

    def _reduced_copy(self, host: torch.Tensor, op: Any) -> torch.Tensor:
        flat = host.reshape(-1).clone()
        self._allreduce_host(flat, op)
        return flat

    @_collective("allreduce", "c10d::allreduce_", lambda tensors, *a: tensors)
    def allreduce(self, tensors, opts=None):
        op = opts.reduceOp if opts is not None else ReduceOp.SUM
        for host in self._hosts(tensors):
            self._allreduce_host(host, op)
        return _completed(list(tensors))

    @_collective("allreduce", "c10d::allreduce_coalesced_", lambda tensors, *a: tensors)
    def allreduce_coalesced(self, tensors, opts=None):
        op = opts.reduceOp if opts is not None else ReduceOp.SUM
        for host in self._hosts(tensors):
            self._allreduce_host(host, op)
        return _completed(list(tensors))

    @_collective("reduce", "c10d::reduce_", lambda tensors, *a: tensors)
    def reduce(self, tensors, opts=None):
        op = opts.reduceOp if opts is not None else ReduceOp.SUM
        root = opts.rootRank if opts is not None else 0
        for host in self._hosts(tensors):
            reduced = self._reduced_copy(host, op)
            if self._rank == root:
                host.copy_(reduced.view(host.shape))
        return _completed(list(tensors))

    @_collective("reduce_scatter", "c10d::reduce_scatter_", lambda outs, *a: outs)
    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        op = opts.reduceOp if opts is not None else ReduceOp.SUM
        for out, inputs in zip(output_tensors, input_tensors):
            self._check_count(inputs, "reduce_scatter")
            host_out = self._host(out)
            flat = torch.cat([self._host(x, need_contiguous=False).reshape(-1) for x in inputs])
            self._allreduce_host(flat, op)
            offset = sum(x.numel() for x in inputs[: self._rank])
            host_out.copy_(flat[offset : offset + out.numel()].view(host_out.shape))
        return _completed(list(output_tensors))

    @_collective("reduce_scatter", "c10d::_reduce_scatter_base_", lambda out, *a: out)
    def reduce_scatter_single(self, output, input, opts=None):
        op = opts.reduceOp if opts is not None else ReduceOp.SUM
        host_out, host_in = self._host(output), self._host(input)
        if host_in.numel() != host_out.numel() * self._size:
            raise ValueError(
                "input tensor must be the same size as output size times world size"
            )
        flat = self._reduced_copy(host_in, op)
        n = host_out.numel()
        host_out.copy_(flat[self._rank * n : (self._rank + 1) * n].view(host_out.shape))
        return _completed([output])

    _reduce_scatter_base = reduce_scatter_single

    @_collective("reduce_scatter", "c10d::reduce_scatter_tensor_coalesced_", lambda outs, *a: outs)
    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        for out, inp in zip(outputs, inputs):
            self.reduce_scatter_single(out, inp, opts)
        return _completed(list(outputs))

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    # --- data movement ----------------------------------------------------------------
    @_collective("broadcast", "c10d::broadcast_", lambda tensors, *a: tensors)
    def broadcast(self, tensors, opts=None):
        gopts = dist.BroadcastOptions()
        if opts is not None:
            gopts.rootRank = opts.rootRank
            gopts.rootTensor = opts.rootTensor
        self._comm.wait(self._gloo.broadcast(self._hosts(tensors), gopts))
        return _completed(list(tensors))

    @_collective("allgather", "c10d::allgather_", lambda outs, ins, *a: ins)
    def allgather(self, output_tensors, input_tensors, opts=None):
        outs = [self._hosts(group, need_contiguous=False) for group in output_tensors]
        for group in output_tensors:
            self._check_count(group, "allgather")
        self._comm.wait(self._gloo.allgather(outs, self._hosts(input_tensors)))
        return _completed(list(output_tensors))

    @_collective("allgather", "c10d::allgather_coalesced_", lambda outs, ins, *a: ins)
    def allgather_coalesced(self, output_lists, input_list, opts=None):
        for outs, inp in zip(output_lists, input_list):
            self.allgather([outs], [inp], opts)
        return _completed(list(output_lists))

    @_collective("allgather", "c10d::_allgather_base_", lambda out, inp, *a: inp)
    def all_gather_single(self, output, input, opts=None):
        host_out, host_in = self._host(output), self._host(input)
        if host_out.numel() != host_in.numel() * self._size:
            raise ValueError(
                "output tensor size must be equal to world_size times input tensor size"
            )
        chunks = list(host_out.reshape(-1).split(host_in.numel()))
        self._comm.wait(self._gloo.allgather([chunks], [host_in.reshape(-1)]))
        return _completed([output])

    _allgather_base = all_gather_single

    @_collective("allgather", "c10d::allgather_into_tensor_coalesced_", lambda outs, ins, *a: ins)
    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        for out, inp in zip(outputs, inputs):
            self.all_gather_single(out, inp, opts)
        return _completed(list(outputs))

    allgather_into_tensor_coalesced = all_gather_single_coalesced

    @_collective("gather", "c10d::gather_", lambda outs, ins, *a: ins)
    def gather(self, output_tensors, input_tensors, opts=None):
        gopts = dist.GatherOptions()
        gopts.rootRank = opts.rootRank if opts is not None else 0
        outs = [self._hosts(group, need_contiguous=False) for group in output_tensors]
        self._comm.wait(self._gloo.gather(outs, self._hosts(input_tensors), gopts))
        return _completed(list(output_tensors))

    @_collective("gather", "c10d::gather_", lambda out, inp, *a: inp)
    def gather_single(self, output, input, opts=None):
        root = opts.rootRank if opts is not None else 0
        host_in = self._host(input)
        outs: list = []
        if self._rank == root:
            host_out = self._host(output)
            if host_out.numel() != host_in.numel() * self._size:
                raise ValueError(
                    "output tensor size must be equal to world_size times input tensor size"
                )
            outs = [list(host_out.reshape(-1).split(host_in.numel()))]
        gopts = dist.GatherOptions()
        gopts.rootRank = root
        self._comm.wait(self._gloo.gather(outs, [host_in.reshape(-1)], gopts))
        return _completed([output])

    @_collective("scatter", "c10d::scatter_", lambda outs, *a: outs)
    def scatter(self, output_tensors, input_tensors, opts=None):
        sopts = dist.ScatterOptions()
        sopts.rootRank = opts.rootRank if opts is not None else 0
        ins = [self._hosts(group) for group in input_tensors]
        self._comm.wait(self._gloo.scatter(self._hosts(output_tensors), ins, sopts))
        return _completed(list(output_tensors))

    @_collective("alltoall", "c10d::alltoall_base_", lambda out, inp, *a: inp)
    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        host_out, host_in = self._host(output), self._host(input)
        self._comm.wait(self._gloo.alltoall_base(
            host_out, host_in, list(output_split_sizes), list(input_split_sizes)
        ))
        return _completed([output])

    alltoall_base = all_to_all_single

    @_collective("alltoall", "c10d::alltoall_", lambda outs, ins, *a: ins)
    def alltoall(self, output_tensors, input_tensors, opts=None):
        self._check_count(output_tensors, "alltoall")
        self._check_count(input_tensors, "alltoall")
        ins = [self._host(t, need_contiguous=False) for t in input_tensors]
        outs = [self._host(t, need_contiguous=False) for t in output_tensors]
        for t in ins + outs:
            if t.dim() == 0:
                raise RuntimeError(
                    f"Scalar tensors (0-dim tensors) are not supported in alltoall. "
                    f"inputTensor.dim()={t.dim()}"
                    + _dist_error("PARAM")
                )
        flat_in = torch.cat([t.reshape(-1) for t in ins])
        flat_out = _host.empty(sum(t.numel() for t in outs), dtype=flat_in.dtype)
        self._comm.wait(self._gloo.alltoall_base(
            flat_out, flat_in, [t.numel() for t in outs], [t.numel() for t in ins]
        ))
        for t, chunk in zip(outs, flat_out.split([t.numel() for t in outs])):
            t.copy_(chunk.view(t.shape))
        return _completed(list(output_tensors))

    @_collective("barrier", "c10d::barrier", None)
    def barrier(self, opts=None):
        self._comm.wait(self._gloo.barrier(dist.BarrierOptions()))
        return _completed([])

    # --- point to point ------------------------------------------------------------------
    def send(self, tensors, dst_rank, tag=0):
        return self._gloo.send(self._hosts(tensors), dst_rank, tag)

    def recv(self, tensors, src_rank, tag=0):
        return self._gloo.recv(self._hosts(tensors), src_rank, tag)

    def recv_anysource(self, tensors, tag=0):
        return self._gloo.recv_anysource(self._hosts(tensors), tag)

    # --- coalescing (collectives already complete synchronously) -------------------------
    def _start_coalescing(self, device) -> None:
        return None

    def _end_coalescing(self, device):
        return _completed([])

    # --- helpers -------------------------------------------------------------------------
    def _check_count(self, tensors: Sequence[torch.Tensor], what: str) -> None:
        if len(tensors) != self._size:
            raise ValueError(
                f"{what}: expected {self._size} tensors (one per rank), got {len(tensors)}"
            )

