"""From one rank's recording to its result: peaks, what is live at the peak, the OOM on the chosen SoC,
step time and MFU, the memory timeline.

The OOM is found by replaying the allocation events into a fresh caching allocator with the SoC's
capacity: the first request it cannot serve (after freeing cached blocks, as torch_npu does) is where the
script would stop, with the message torch_npu would print.
"""
from __future__ import annotations

from typing import Dict, List

CATEGORIES = ("parameters", "gradients", "optimizer state", "activations", "temporaries", "communication buffers")
_TIMELINE_POINTS = 1500


def category(a) -> str:
    if a.category is not None:
        return a.category
    return "communication buffers" if a.comm else "temporaries"


def live_at(events: List[tuple], index: int) -> list:
    """The allocations alive just after event ``index``."""
    live: Dict[int, object] = {}
    for a, sign, *_ in events[:index + 1]:
        if sign > 0:
            live[a.id] = a
        else:
            live.pop(a.id, None)
    return list(live.values())


def breakdown(allocs, round_size) -> Dict[str, int]:
    out = {c: 0 for c in CATEGORIES}
    for a in allocs:
        out[category(a)] += round_size(a.nbytes)
    return out


def replay_oom(events: List[tuple], conf, capacity: int, device: int):
    """``(message, alloc)`` of the first request a device of ``capacity`` bytes cannot serve, or None."""
    from ascend_compat.simulator.caching_allocator import DeviceAllocator, OutOfMemory

    model = DeviceAllocator(conf, device=device, capacity=capacity)
    blocks: Dict[int, object] = {}
    for a, sign, *_ in events:
        if sign > 0:
            try:
                blocks[a.id] = model.malloc(a.nbytes)
            except OutOfMemory as exc:
                return str(exc), a
        else:
            b = blocks.pop(a.id, None)
            if b is not None:
                model.free(b)
    return None


def step_window(rec) -> tuple:
    """``(first op, end op, steps)`` of the last planned step (the first step includes set-up)."""
    marks = rec.step_marks
    if len(marks) >= 2:
        return marks[-2][2], marks[-1][2], 1
    if marks:
        start = next((i for i, op in enumerate(rec.ops) if op.module), 0)
        return start, marks[-1][2], 1
    start = next((i for i, op in enumerate(rec.ops) if op.module), 0)
    return start, len(rec.ops), 1


def analyse(rec, spec: dict) -> dict:
    from ascend_compat.knowledge.soc_perf import perf
    from ascend_compat.plan import roofline
    from ascend_compat.simulator.torch_npu.npu.soc_specs import soc_spec

    model = rec.alloc_model
    events = rec.events
    spec_soc = soc_spec(spec["soc"])
    capacity = spec.get("capacity") or spec_soc.total_memory
    result: dict = {"rank": spec["rank"], "device_memory": capacity, "steps": rec.step, "ops": len(rec.ops),
                    "allocations": len(rec.allocs)}
    peak_reserved = max((e[3] for e in events), default=0)
    result["peak_allocated"] = rec.peak_allocated
    result["peak_reserved"] = peak_reserved
    if rec.peak_event >= 0:
        a = events[rec.peak_event][0]
        result.update(peak_op=a.op, peak_module=a.module, peak_site=a.site, peak_phase=a.phase)
        live = live_at(events, rec.peak_event)
        result["live_at_peak"] = breakdown(live, model.round_size)
        result["activation_blocks"] = _activation_blocks(live, model.round_size)
    else:
        result.update(peak_op=None, peak_module=None, peak_site=None, peak_phase=None,
                      live_at_peak={c: 0 for c in CATEGORIES}, activation_blocks={})
    oom = replay_oom(events, model.conf, capacity, rec.index)
    if oom is None:
        result.update(oom=None, oom_op=None, oom_module=None, oom_site=None)
    else:
        msg, a = oom
        result.update(oom=msg, oom_op=a.op, oom_module=a.module, oom_site=a.site, oom_phase=a.phase)
    soc = perf(spec["soc"])
    start, end, _ = step_window(rec)
    ops = rec.ops[start:end]
    if soc is not None and ops:
        est = roofline.estimate(ops, soc)
        peak = _mfu_peak(ops, soc)
        mfu = est["flops"] / (est["seconds"] * peak) if est["seconds"] else None
        result.update(step_time_s=est["seconds"], time_by_kind=est["by_kind"], time_by_module=est["by_module"],
                      time_by_phase=est["by_phase"], communication_hidden_s=est["hidden"],
                      flops_per_step=est["flops"], mfu=mfu)
    else:
        result.update(step_time_s=None, time_by_kind={}, time_by_module={}, time_by_phase={},
                      communication_hidden_s=None, flops_per_step=None, mfu=None)
    result["collectives"] = _collectives(ops)
    result["timeline"] = _timeline(events)
    return result


def _mfu_peak(ops, soc) -> float:
    import torch

    fp32 = sum(op.flops for op in ops if op.matmul and op.dtype == torch.float32)
    low = sum(op.flops for op in ops if op.matmul and op.dtype != torch.float32)
    return soc.cube_fp32 if fp32 > low else soc.cube_fp16


def _collectives(ops) -> Dict[str, dict]:
    out: Dict[str, dict] = {}
    for op in ops:
        if op.comm:
            c = out.setdefault(op.comm, {"count": 0, "bytes": 0, "group": op.group})
            c["count"] += 1
            c["bytes"] += op.comm_bytes
    return out


def _activation_blocks(live, round_size) -> Dict[str, int]:
    """Activation bytes live at the peak per repeated block (``layers.3``): activation checkpointing
    keeps one input per block instead."""
    out: Dict[str, int] = {}
    for a in live:
        if category(a) != "activations":
            continue
        out[_block(a.module)] = out.get(_block(a.module), 0) + round_size(a.nbytes)
    return out


def _block(path: str) -> str:
    parts = path.split(".") if path else []
    for i, p in enumerate(parts):
        if p.isdigit():
            return ".".join(parts[:i + 1])
    return path or "(outside modules)"


def _timeline(events) -> List[list]:
    """``[event index, allocated, reserved, phase]`` at most ``_TIMELINE_POINTS`` points (peaks kept)."""
    n = len(events)
    if n == 0:
        return []
    stride = max(1, n // _TIMELINE_POINTS)
    out = []
    for start in range(0, n, stride):
        chunk = events[start:start + stride]
        top = max(range(len(chunk)), key=lambda i: chunk[i][2])
        a, _sign, allocated, reserved, _op = chunk[top]
        out.append([start + top, allocated, max(e[3] for e in chunk), a.phase])
    return out
