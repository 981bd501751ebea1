"""Step time from the recorded ops: a roofline per op and an alpha-beta model per collective.

An op takes ``max(FLOPs / peak(dtype), bytes / HBM bandwidth)``: Cube peak (FP16/BF16, FP32 at a
quarter) for matrix ops, the vector rate otherwise, each divided by the efficiency of
``knowledge.soc_perf``. A collective over ``n`` ranks of ``S`` bytes takes ``steps x latency +
volume / bandwidth`` with ring volumes (all-reduce ``2(n-1)/n S``, all-gather and reduce-scatter
``(n-1)/n`` of the gathered size, broadcast ``S``), over HCCS inside a node and RoCE beyond it.

Overlap (:func:`estimate`): the ops run on two streams, as on Ascend, where HCCL has its own. A collective
issued during the backward pass that the compute stream need not wait for (``OpRecord.overlap``: issued
with ``async_op=True`` as by DDP's reducer and FSDP2, as a functional collective, or on a side stream as by
DeepSpeed's ``overlap_comm``) starts when the compute before it in the recorded order has finished and the
previous collective is done, and runs while the backward pass goes on; the first op after the backward pass
(the optimizer step, a gradient-clipping norm) waits for them. Every other collective (forward all-gathers,
the optimizer's, a loss all-reduce, DeepSpeed ZeRO-1/2's reductions with ``overlap_comm`` off) blocks: it
starts after the compute and communication before it and the compute after it waits for it. Not modelled:
contention between the streams for HBM bandwidth and AI cores (HCCL's reductions run on AI cores) and FSDP2's
forward prefetch (its forward all-gathers count in full).
"""
from __future__ import annotations

from typing import Dict, Iterable

import torch

from ascend_compat.knowledge.soc_perf import SocPerf, efficiency


def op_time(op, soc: SocPerf) -> tuple:
    """``(seconds, kind)`` of one recorded op; kind is ``compute``, ``memory`` or ``communication``."""
    if op.comm:
        return comm_time(op.comm, op.comm_bytes, op.group, soc), "communication"
    if op.flops and op.matmul:
        peak = soc.cube_fp32 if op.dtype == torch.float32 else soc.cube_fp16
        compute = op.flops / (peak * efficiency["cube"])
    else:
        compute = op.flops / soc.vector if op.flops else 0.0
    memory = op.bytes / (soc.hbm_bandwidth * efficiency["memory"])
    return (compute, "compute") if compute >= memory else (memory, "memory")


def comm_time(kind: str, nbytes: int, n: int, soc: SocPerf) -> float:
    if n <= 1:
        return 0.0
    if n <= soc.node_size:
        bw, lat = soc.hccs_bandwidth, soc.hccs_latency
    else:
        bw, lat = soc.roce_bandwidth, soc.roce_latency
    bw *= efficiency["comm"]
    if "all_reduce" in kind or kind.startswith("allreduce"):
        return 2 * (n - 1) * lat + 2 * (n - 1) / n * nbytes / bw
    if "gather" in kind:
        return (n - 1) * lat + (n - 1) * nbytes / bw  # nbytes is one rank's shard
    if "reduce_scatter" in kind or "scatter" in kind:
        return (n - 1) * lat + (n - 1) / n * nbytes / bw  # nbytes is the full input
    if "all_to_all" in kind or "alltoall" in kind:
        return (n - 1) * lat + (n - 1) / n * nbytes / bw
    if "barrier" in kind:
        return (n - 1) * lat
    return lat * max(1, n.bit_length()) + nbytes / bw  # broadcast, send/recv


def estimate(ops: Iterable, soc: SocPerf) -> Dict[str, object]:
    """Totals over ``ops``: seconds by kind, by module and by phase (each op's own time), FLOPs, and the step
    time ``seconds`` of the two-stream timeline (module docstring); ``hidden``: communication time that ran
    behind backward compute (the sum of all op times less ``seconds``)."""
    by_kind = {"compute": 0.0, "memory": 0.0, "communication": 0.0}
    by_module: Dict[str, float] = {}
    by_phase: Dict[str, float] = {}
    flops = 0
    compute_end = comm_end = 0.0  # when each stream is next free
    for op in ops:
        t, kind = op_time(op, soc)
        by_kind[kind] += t
        top = _top_module(op.module)
        by_module[top] = by_module.get(top, 0.0) + t
        by_phase[op.phase] = by_phase.get(op.phase, 0.0) + t
        flops += op.flops
        backward = op.phase == "backward"
        if kind == "communication" and backward and op.overlap:
            comm_end = max(compute_end, comm_end) + t
        elif kind == "communication":
            compute_end = comm_end = max(compute_end, comm_end) + t
        else:
            if not backward:
                compute_end = max(compute_end, comm_end)
            compute_end += t
    seconds = max(compute_end, comm_end)
    return {"seconds": seconds, "hidden": max(0.0, sum(by_kind.values()) - seconds), "by_kind": by_kind,
            "by_module": by_module, "by_phase": by_phase, "flops": flops}


def _top_module(path: str) -> str:
    """The module two levels below the root (``GPT.transformer.h`` for ``GPT.transformer.h.3.attn``), so
    repeated blocks add up."""
    if not path:
        return "(outside modules)"
    parts = path.split(".")
    out = []
    for p in parts:
        if p.isdigit():
            break
        out.append(p)
        if len(out) == 3:
            break
    return ".".join(out)
