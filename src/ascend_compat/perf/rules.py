"""From a :class:`~ascend_compat.perf.events.StepRecord` to findings: one function per rule.

Each rule reads the recorded events only, so it judges a live recording and a profiler trace
alike. Weights are per recorded step. The advice texts live here and nowhere else.

| rule | what it finds | severity |
| --- | --- | --- |
| ``cpu-fallback`` | an op torch_npu runs on the host (inputs copied out, results back) | high |
| ``device-sync`` | ``.item()``/``bool()``, ``.cpu()``/``.tolist()``, data-dependent shapes, printing | high if every step |
| ``h2d-copy`` | a host-to-device copy from pageable memory or blocking, every step | medium |
| ``tensor-from-python`` | ``torch.tensor(list)`` built and copied to the device every step | medium |
| ``shape-churn`` | op sites whose input shapes change from step to step (recompilation) | high / medium |
| ``fp32-matmul`` | most matmul/conv FLOPs computed in float32 | high / medium |
| ``tiny-ops`` | most device ops launch kernels on a few elements (launch-bound) | medium |
| ``layout`` | non-contiguous or channels_last inputs to matmul/conv (format conversions) | medium |
| ``unfused-optimizer`` | an optimiser updating parameter by parameter | medium |
| ``manual-update`` | a hand-written update loop (``p.data.add_(p.grad, ...)`` per parameter) | medium |
| ``unfused-loss`` | ``log(softmax(x))`` as two ops instead of ``log_softmax``/``cross_entropy`` | medium |
| ``fused-*`` | hand-written forms of torch_npu's fused ops: attention, RMSNorm, rotary, SwiGLU, GeGLU, tanh GELU (medium); GELU, add + LayerNorm, transpose-contiguous-view (low) (:mod:`.fusion`) | medium / low |
| ``fused-optimizer`` | an optimizer with multi-tensor (foreach) kernels where a fused one runs | low |

Rules run on the events of one phase at a time (:mod:`ascend_compat.observe.phases`; training steps
by default): a finding is computed from, and shown with, the phase it comes from.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Callable, Dict, List, Optional, Tuple

from ascend_compat.observe.phases import TRAIN
from ascend_compat.perf import fusion
from ascend_compat.perf.events import OpEvent, Site, StepRecord
from ascend_compat.perf.report import Finding, Report, sort_key

#: a device op on fewer elements than this is "tiny" (launch cost dominates its run time)
TINY_NUMEL = 256
#: tiny-ops fires when tiny ops are at least this share of device ops and this many per step
TINY_SHARE, TINY_PER_STEP = 0.6, 100

_SYNC_TITLES = {
    "item": "{what} reads a device value on the host, synchronising the device",
    "to_cpu": "{what} copies a device tensor to the host, synchronising the device",
    "data_dependent": "{what} has a data-dependent output shape: the host waits for the device to size it",
    "print": "printing a device tensor copies it to the host and synchronises the device",
}
_SYNC_FIXES = {
    "item": ("keep the value on the device (accumulate `running += loss.detach()`) and read it with "
             "`.item()` only every N steps, e.g. when logging"),
    "to_cpu": ("keep metrics on the device and copy them once per logging interval; when a copy is needed "
               "every step, copy into pinned memory with `.to('cpu', non_blocking=True)` and read it a step later"),
    "data_dependent": ("use a fixed-shape form: `torch.where(mask, x, 0)` or multiplying by the mask instead of "
                       "boolean indexing / `nonzero`, or give the output size (`nonzero_static`, "
                       "`repeat_interleave(..., output_size=n)`)"),
    "print": "print every N steps, or accumulate on the device and print the accumulated value",
}


def analyze(record: StepRecord, backend: str = "", phases: Tuple[str, ...] = (TRAIN,)) -> Report:
    """Every rule's findings for the ``phases`` of ``record`` (each phase judged on its own events),
    most severe and heaviest first."""
    findings: List[Finding] = []
    for phase in phases:
        part = record.only(phase)
        if not any(_on_npu(e) for e in part.events):
            continue
        for rule in RULES:
            for finding in rule(part):
                finding.phase = phase
                findings.append(finding)
    findings.sort(key=sort_key)
    return Report(findings, record, backend, tuple(phases))


def _on_npu(e: OpEvent) -> bool:
    return e.kind != "other" or bool(e.h2d)


# ---------------------------------------------------------------- helpers

def _by_site(events: List[OpEvent], key: Callable[[OpEvent], object] = lambda e: None) -> Dict[tuple, List[OpEvent]]:
    groups: Dict[tuple, List[OpEvent]] = defaultdict(list)
    for e in events:
        groups[(e.site, key(e))].append(e)
    return groups


def _every_step(record: StepRecord, events: List[OpEvent]) -> bool:
    """The events occur in every recorded step. The run's first step (step 0) does not count when others
    were recorded: it starts with the script and lacks the tail of a previous step (the logging after
    ``optimizer.step()`` belongs to the next step), so severities do not change with the window."""
    steps = set(record.steps)
    if len(steps) > 1:
        steps.discard(0)
    return {e.step for e in events} >= steps


def _module(events: List[OpEvent]) -> str:
    return next((e.module for e in events if e.module), "")


def _what(events: List[OpEvent]) -> str:
    names = {e.name for e in events}
    if names <= {"aten::_local_scalar_dense"}:
        return "`.item()` (or `float()`/`int()`/`bool()` of a tensor)"
    if names <= {"aten::_to_copy", "aten::copy_"}:
        return "`.cpu()` / `.tolist()` / `.numpy()` / `.to('cpu')`"
    return ", ".join(f"`{n}`" for n in sorted(names))


def _rate(count: int, n: int, unit: str = "call") -> str:
    """``"1 call/step"``, ``"2.5 calls/step"``."""
    value = count / n
    return f"{value:g} {unit}{'' if value == 1 else 's'}/step"


def _is_device_op(e: OpEvent) -> bool:
    return e.kind in ("native", "cpu_fallback") and "view" not in e.tags and not e.sync


# ---------------------------------------------------------------- rules

def cpu_fallbacks(record: StepRecord) -> List[Finding]:
    from ascend_compat.knowledge.operators import rewrite_for

    n = record.n_steps
    groups: Dict[str, List[OpEvent]] = defaultdict(list)
    for e in record.events:
        if e.kind == "cpu_fallback":
            groups[e.name].append(e)
    out = []
    for name, events in groups.items():
        advice = rewrite_for(name)
        fix = (advice + ", or move it out of the training step" if advice else
               f"torch_npu has no NPU kernel for {name}: replace it with ops that run natively, or move it out "
               "of the training step; `ascend-compat audit` lists alternatives where one is known")
        out.append(Finding("cpu-fallback", "high",
                           f"{name} falls back to the CPU ({_rate(len(events), n)}): its inputs are "
                           "copied to the host and its results back",
                           fix, events[0].site, _module(events),
                           {"calls_per_step": len(events) / n,
                            "bytes_per_step": sum(e.d2h + e.h2d for e in events) / n,
                            "d2h_bytes_per_step": sum(e.d2h for e in events) / n,
                            "h2d_bytes_per_step": sum(e.h2d for e in events) / n},
                           events[0].start_ns))
    return out


#: syncs that a library issues on the user's behalf (``OpEvent.via``): (title, fix), severity medium
_LIBRARY_SYNCS = {
    "GradScaler.step": (
        "GradScaler.step reads the optimizer's inf/NaN flag on the host (`.item()`) to decide whether to step, "
        "synchronising the device",
        "create the optimizer with `fused=True` (e.g. `torch.optim.AdamW(params, lr=..., fused=True)`): GradScaler "
        "then leaves the inf/NaN check to the fused kernel on the device and does not synchronise; otherwise this "
        "sync is GradScaler's design (CUDA has it too)"),
}


def device_syncs(record: StepRecord) -> List[Finding]:
    n = record.n_steps
    out = []
    # a data-dependent op's backward (index_put of a mask) repeats its forward's finding at the backward() line
    syncs = [e for e in record.events if e.sync and not (e.sync == "data_dependent" and "backward" in e.tags)]
    for (site, (kind, via)), events in _by_site(syncs, lambda e: (e.sync, e.via)).items():
        if via in _LIBRARY_SYNCS:
            title, fix = _LIBRARY_SYNCS[via]
            out.append(Finding("device-sync", "medium", f"{title} ({_rate(len(events), n)})", fix, site,
                               _module(events), {"calls_per_step": len(events) / n,
                                                 "bytes_per_step": sum(e.d2h for e in events) / n},
                               events[0].start_ns))
            continue
        every = _every_step(record, events)
        title = _SYNC_TITLES[kind].format(what=_what(events)) + f" ({_rate(len(events), n)})"
        out.append(Finding("device-sync", "high" if every else "medium", title, _SYNC_FIXES[kind], site,
                           _module(events), {"calls_per_step": len(events) / n,
                                             "bytes_per_step": sum(e.d2h for e in events) / n},
                           events[0].start_ns))
    return out


def host_to_device_copies(record: StepRecord) -> List[Finding]:
    n = record.n_steps
    copies = [e for e in record.events if e.h2d and e.name in ("aten::_to_copy", "aten::copy_")
              and "construct" not in e.tags and ("pageable" in e.tags or "blocking" in e.tags)]
    out = []
    for (site, _), events in _by_site(copies).items():
        if not _every_step(record, events):
            continue
        how = "from pageable memory" if any("pageable" in e.tags for e in events) else "blocking"
        out.append(Finding("h2d-copy", "medium",
                           f"host-to-device copy {how} in every step ({_rate(len(events), n)})",
                           "load batches with `DataLoader(..., pin_memory=True)` and copy them with "
                           "`.to(device, non_blocking=True)` so the copy overlaps compute; move tensors that do "
                           "not change to the device once, before the loop",
                           site, _module(events), {"calls_per_step": len(events) / n,
                                                   "bytes_per_step": sum(e.h2d for e in events) / n},
                           events[0].start_ns))
    return out


def tensors_from_python(record: StepRecord) -> List[Finding]:
    n = record.n_steps
    out = []
    built = [e for e in record.events if "construct" in e.tags]
    for (site, _), events in _by_site(built).items():
        out.append(Finding("tensor-from-python", "medium",
                           f"a tensor is built from Python data and copied to the device ({_rate(len(events), n, 'time')})",
                           "build it once before the loop and keep it on the device, or create it there directly "
                           "(`torch.arange/full/zeros(..., device=device)`); keep per-step values as device tensors "
                           "instead of Python lists",
                           site, _module(events), {"calls_per_step": len(events) / n,
                                                   "bytes_per_step": sum(e.h2d for e in events) / n},
                           events[0].start_ns))
    return out


def shape_churn(record: StepRecord) -> List[Finding]:
    if len(record.steps) < 2:
        return []
    per_site: Dict[Tuple[Optional[Site], str], Dict[int, set]] = defaultdict(lambda: defaultdict(set))
    order: Dict[Tuple[Optional[Site], str], OpEvent] = {}
    for e in record.events:
        if e.kind == "other" or "view" in e.tags or e.site is None:
            continue
        key = (e.site, e.name)
        per_site[key][e.step].add((e.shapes, e.out_shapes))
        order.setdefault(key, e)
    churning = {k: v for k, v in per_site.items()
                if len(v) >= 2 and len({frozenset(s) for s in v.values()}) > 1}
    if not churning:
        return []
    # where the changing shapes come from: a site whose inputs keep their shapes while its output's
    # change (a factory, a batch read) - else the first churning site of the step
    def origin(key) -> bool:
        sigs = [sig for sigs in churning[key].values() for sig in sigs]
        return len({shapes for shapes, _ in sigs}) == 1
    candidates = [k for k in churning if origin(k)] or list(churning)
    first = order[min(candidates, key=lambda k: order[k].start_ns)]
    distinct = len({sig for v in churning.values() for sigs in v.values() for sig in sigs})
    share = len(churning) / len(per_site)
    return [Finding("shape-churn", "high" if share >= 0.3 else "medium",
                    f"{len(churning)} of {len(per_site)} op call sites see different input shapes from step to "
                    f"step, starting with {first.name} here ({distinct} distinct shapes over "
                    f"{len(record.steps)} steps): each new shape compiles new kernels on Ascend",
                    "pad inputs to a few fixed shapes (round sequence lengths up to a multiple of 64 or pad to "
                    "the maximum, e.g. the tokenizer's `padding='max_length'`) and drop the last incomplete "
                    "batch (`DataLoader(..., drop_last=True)`)",
                    first.site, first.module, {"site_share": share, "sites": float(len(churning))},
                    first.start_ns)]


def fp32_matmuls(record: StepRecord) -> List[Finding]:
    by_dtype: Counter = Counter()
    biggest: Optional[OpEvent] = None
    for e in record.events:
        if not e.flops or e.kind == "other":
            continue
        dtype = next((d for d in e.dtypes if d.startswith(("float", "bfloat", "half"))), "")
        by_dtype[dtype] += e.flops
        if dtype == "float32" and (biggest is None or e.flops > biggest.flops):
            biggest = e
    total = sum(by_dtype.values())
    if not total or biggest is None:
        return []
    share = by_dtype["float32"] / total
    if share < 0.5:
        return []
    shapes = " @ ".join("x".join(map(str, s)) for s in biggest.shapes if len(s) >= 2)
    return [Finding("fp32-matmul", "high" if share >= 0.9 else "medium",
                    f"{share:.0%} of matmul/convolution FLOPs run in float32 (largest here: {biggest.name} "
                    f"{shapes}); Ascend's Cube unit is several times faster in float16/bfloat16",
                    "run the forward pass under `torch.autocast('npu', dtype=torch.bfloat16)` (written "
                    "`torch.autocast('cuda', ...)` it works under the shim too) or cast the model with "
                    "`model.to(torch.bfloat16)`; where float32 must stay, `torch.npu.matmul.allow_hf32 = True` "
                    "lets matmuls use HF32",
                    biggest.site, biggest.module,
                    {"flop_share": share, "fp32_flops_per_step": by_dtype["float32"] / record.n_steps},
                    biggest.start_ns)]


def tiny_ops(record: StepRecord) -> List[Finding]:
    device = [e for e in record.events if _is_device_op(e) and e.out_numel >= 0]
    tiny = [e for e in device if e.out_numel < TINY_NUMEL]
    n = record.n_steps
    if not device or len(tiny) / len(device) < TINY_SHARE or len(tiny) / n < TINY_PER_STEP:
        return []
    site, _ = Counter(e.site for e in tiny).most_common(1)[0]
    at_site = [e for e in tiny if e.site == site]
    return [Finding("tiny-ops", "medium",
                    f"{len(tiny) / n:g} of {len(device) / n:g} device ops per step work on fewer than "
                    f"{TINY_NUMEL} elements (launch-bound; most from here: {len(at_site) / n:g}/step)",
                    "batch the work into fewer, larger ops: vectorise Python loops over tensors, use "
                    "`torch._foreach_*` for lists of tensors, keep scalars as Python numbers, or capture the "
                    "step as a graph (`torch.compile`, torch_npu's graph mode)",
                    site, _module(at_site), {"op_share": len(tiny) / len(device), "ops_per_step": len(tiny) / n},
                    at_site[0].start_ns)]


def layouts(record: StepRecord) -> List[Finding]:
    n = record.n_steps
    out = []
    for tag, title, fix in (
        ("noncontiguous", "{op} gets a non-contiguous input ({k}): a contiguous copy (TransData) runs "
                          "before the Cube kernel",
         "make the operand contiguous once where it is produced (`.contiguous()` after the permute/slice), or "
         "reorder the computation so matmul operands are contiguous or plainly transposed"),
        ("channels_last", "{op} gets a channels_last input ({k}): Ascend converts it to its own "
                          "convolution format on every call",
         "drop `.to(memory_format=torch.channels_last)` (a CUDA tensor-core optimisation); keep NCHW tensors "
         "on Ascend"),
    ):
        # backward ops inherit the forward's layout: the forward call site is the one to fix
        tagged = [e for e in record.events if tag in e.tags and "backward" not in e.tags]
        for (site, name), events in _by_site(tagged, lambda e: e.name).items():
            out.append(Finding("layout", "medium", title.format(op=name, k=_rate(len(events), n)), fix, site,
                               _module(events), {"calls_per_step": len(events) / n}, events[0].start_ns))
    return out


def unfused_optimizers(record: StepRecord) -> List[Finding]:
    n = record.n_steps
    out = []
    slow = [name for name, impl in record.optimizers.items() if impl == "single_tensor"]
    if not slow:
        return out
    events = [e for e in record.events if "optimizer" in e.tags and _is_device_op(e)]
    if not events:  # the optimizer updates host tensors: nothing for the NPU to fuse
        return out
    names = ", ".join(sorted(slow))
    out.append(Finding("unfused-optimizer", "medium",
                       f"{names} updates the parameters one tensor at a time ({_rate(len(events), n, 'op')})",
                       f"create it with `foreach=True` (one multi-tensor kernel per op) or `fused=True`, e.g. "
                       f"`torch.optim.{slow[0]}(params, lr=..., foreach=True)`; on Ascend torch_npu also offers "
                       "`torch_npu.optim.NpuFusedAdamW` and friends",
                       events[0].site, "", {"ops_per_step": len(events) / n}, events[0].start_ns))
    return out


#: in-place updates a hand-written optimizer applies to each parameter
_UPDATES = frozenset({"aten::add_.Tensor", "aten::sub_.Tensor", "aten::addcmul_", "aten::addcdiv_", "aten::mul_.Tensor",
                      "aten::copy_", "aten::lerp_.Scalar", "aten::lerp_.Tensor"})
#: a site updating at least this many tensors per step is a loop over parameters
MANUAL_UPDATES_PER_STEP = 4


def manual_updates(record: StepRecord) -> List[Finding]:
    """``for p in model.parameters(): p.data.add_(p.grad, alpha=-lr)``: one in-place op per parameter, each
    reading a gradient (a tensor backward produced) into a tensor backward did not produce, outside any
    optimizer's step."""
    n = record.n_steps
    backward = {e.seq for e in record.events if "backward" in e.tags and e.seq >= 0}
    if not backward:
        return []
    updates = [e for e in record.events if e.name in _UPDATES and "optimizer" not in e.tags
               and "backward" not in e.tags and len(e.inputs) > 1 and e.inputs[0] not in backward
               and any(seq in backward for seq in e.inputs[1:])]
    out = []
    for (site, _), events in _by_site(updates).items():
        if len(events) / n < MANUAL_UPDATES_PER_STEP:
            continue
        out.append(Finding("manual-update", "medium",
                           f"parameters are updated one tensor at a time outside an optimizer ({_rate(len(events), n, 'op')}"
                           f" of {', '.join(sorted({e.name for e in events}))}): one kernel launch per parameter",
                           "use a torch optimizer with multi-tensor kernels, e.g. `torch.optim.SGD(model.parameters(), "
                           "lr=lr, foreach=True)` (or `fused=True`), or update every parameter in one call with "
                           "`torch._foreach_add_(params, grads, alpha=-lr)`",
                           site, _module(events), {"ops_per_step": len(events) / n}, events[0].start_ns))
    return out


def unfused_losses(record: StepRecord) -> List[Finding]:
    n = record.n_steps
    out = []
    tagged = [e for e in record.events if "log_of_softmax" in e.tags]
    for (site, _), events in _by_site(tagged).items():
        out.append(Finding("unfused-loss", "medium",
                           f"log(softmax(x)) is computed as two ops ({_rate(len(events), n)}): unfused and "
                           "numerically unstable",
                           "use `torch.nn.functional.log_softmax(x, dim)`, or `torch.nn.functional.cross_entropy("
                           "logits, target)`, which runs as one fused kernel on Ascend",
                           site, _module(events), {"calls_per_step": len(events) / n}, events[0].start_ns))
    return out


RULES = (cpu_fallbacks, device_syncs, host_to_device_copies, tensors_from_python, shape_churn, fp32_matmuls,
         tiny_ops, layouts, unfused_optimizers, manual_updates, unfused_losses, fusion.fused_ops, fusion.fused_optimizers)
