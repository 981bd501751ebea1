"""One op call compared: the NPU's result against the CUDA stand-in and the float64 golden (:mod:`.hostrun`),
judged by the accuracy standard (:mod:`.standard`), with by-design differences told apart and float64
segments followed (:mod:`.float64`).

:func:`compare_call` is what :class:`~.mirror.Comparison` does for each op it compares (at the dispatch
level, and at the Python level for ``npu::`` ops whose reference autograd decomposes). Per output:

1. equal to the stand-in (bit for bit, NaN equal to NaN): passed, and no golden is computed;
2. else judged (:func:`.standard.judge`) against the stand-in (TF32-rounded for a float32 convolution or
   matmul while CUDA's switch for it is on);
3. a float32 convolution or matmul while torch_npu's HF32 switch for it is on: *as on Ascend* when it
   passes against the stand-in or against an HF32-rounded one (the NPU did what its switch says), a
   departure otherwise;
4. a result wider on the host than on the NPU (float64 asked for, float32 given: torch_npu's downcast)
   starts a float64 segment instead of being judged; a result computed from segment values is judged
   where the value comes back to float32 or lower (*as on Ascend* when it matches the float64
   computation within the standard, a departure when not) or carries the segment on.

The call's result is its worst output's: departure > as on Ascend > passed.
"""
from __future__ import annotations

import os
from typing import Any, Callable, List, Optional, Tuple  # noqa: F401

from ascend_compat.accuracy import hostrun
from ascend_compat.accuracy.results import AS_ON_ASCEND, DEPARTURE, PASSED, OpResult
from ascend_compat.accuracy.standard import Verdict, judge

__all__ = ["compare_call", "judge_return", "library_frame", "NOT_COMPARED"]

#: the reasons an op call is not compared (the report lists each op with its count and reason)
NOT_COMPARED = {
    "view": "a view: no computation of its own (compared where its base was computed)",
    "random": "random: draws from the NPU's generator, which the host cannot repeat",
    "filtered": "outside --ops / --modules",
    "sampling": "skipped by --sample",
    "max_numel": "an output larger than --max-numel",
    "no_result": "no tensor result (a Python number or None: compared where the value was computed)",
    "to_host": "a copy to the host (compared where the value was computed)",
    "downcast": "float64 asked for, float32 given (torch_npu's downcast): judged where the value returns",
    "no_reference": "an npu:: op without a CPU reference",
    "fused_whole": "an npu:: op compared as a whole at the Python level (its pieces are compared here)",
}
_RANK = {PASSED: 0, AS_ON_ASCEND: 1, DEPARTURE: 2}


def _same(a, b) -> bool:
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if torch.equal(a, b):  # the common case, one pass in C
        return True
    if a.is_floating_point() or a.is_complex():  # equal but for NaNs in the same places?
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return False


def _tensors(value) -> List[Any]:
    """Tensors of a result, flattened (None where an entry is not a tensor)."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return [None]


def library_frame(start) -> Optional[Tuple[str, int, str]]:
    """The innermost frame from ``start`` outward that is neither ascend_compat's nor torch's dispatch
    machinery: the library (or user) code that made the call."""
    import sys

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame = start if start is not None else sys._getframe(1)
    while frame is not None:
        f = frame.f_code.co_filename
        if not (f.startswith(package) or f.endswith(("torch/_ops.py", "torch/overrides.py",
                                                     "torch/utils/_python_dispatch.py", "torch/utils/_pytree.py"))):
            return f, frame.f_lineno, frame.f_code.co_name
        frame = frame.f_back
    return None


def _phase() -> str:
    import torch

    return "backward" if torch._C._current_autograd_node() is not None else "forward"


def judge_return(name: str, npu_value, golden_value) -> Verdict:
    """A value leaving a float64 segment (NPU: float32 or lower; ``golden_value``: the float64 segment's):
    judged against the float64 value rounded as CUDA would round it (benchmark comparison; exact for
    integers and bools)."""
    from ascend_compat.accuracy.float64 import returned_value

    npu_t, gold_t = returned_value(npu_value, golden_value)
    if not (npu_t.is_floating_point() or npu_t.is_complex()):
        return judge(name, npu_t, gold_t.to(npu_t.dtype), gold_t, "binary_consistency")
    return judge(name, npu_t, gold_t.to(npu_t.dtype), gold_t, "benchmark")


def compare_call(c, name: str, host: "hostrun.HostRun", args, kwargs, run: Callable, module: str, site, caller=None):
    """Run the op (``run()``) and compare it (see the module docstring); returns its result. ``c`` is the
    :class:`~.mirror.Comparison` (``note``, ``add``, ``segments``, ``max_numel``, switches); ``host`` the
    op's :class:`~.hostrun.HostRun`, made before the op runs (its snapshot of the inputs)."""
    from torch.utils._pytree import tree_flatten

    flat, _ = tree_flatten((args, kwargs))
    shadows = c.segments.shadowed(flat)
    written = host.written
    out = run()
    results = [kwargs[k] if isinstance(k, str) else args[k] for k in written] if written else out
    group = hostrun.group_of(name)  # an npu:: op's reference runs matmuls: HF32 governs it as a matmul
    tf32 = bool(group) and c.tf32[group]
    try:
        with c.host_autocast():
            standin = host.standin(tf32=tf32)
    except Exception as exc:  # noqa: BLE001 - the host has no kernel for this op and dtype
        for t in _tensors(results):
            if t is not None:
                c.segments.drop(t)
        c.note(name, f"no host kernel ({type(exc).__name__}: {_first_line(exc)})")
        return out
    npu_outs, host_outs = _tensors(results), _tensors(standin)
    seg = _segment_result(c, host, shadows) if shadows else None
    if shadows and isinstance(results, (int, float, bool)) and isinstance(seg, (int, float, bool)):
        first = next(iter(shadows.values()))  # .item() of a segment value: it leaves as a Python number
        kind, verdict, dtype, by_design, note = _segment_verdict(judge_return(name, results, seg), "float32", first)
        c.add(OpResult(0, name, 0, dtype, module, site, _phase(), verdict, kind, by_design, _library(caller, site),
                       note))
        return out
    seg_outs = _tensors(seg) if seg is not None else None
    worst: Optional[Tuple[str, Verdict, str, str, str]] = None  # (kind, verdict, dtype, by_design, note)
    for k, npu_t in enumerate(npu_outs):
        host_t = host_outs[k] if k < len(host_outs) else None
        seg_t = seg_outs[k] if seg_outs is not None and k < len(seg_outs) else None
        found = _judge_output(c, name, host, k, npu_t, host_t, seg_t, shadows, group, site, caller)
        if found is not None and (worst is None or (_RANK[found[0]], found[1].excess) > (_RANK[worst[0]], worst[1].excess)):
            worst = found
    if worst is None:
        if not any(t is not None for t in npu_outs):
            c.note(name, NOT_COMPARED["no_result"])
        return out
    kind, verdict, dtype, by_design, note = worst
    if kind == "skip":
        c.note(name, NOT_COMPARED[note])
        return out
    library = _library(caller, site) if by_design == "float64" else None
    c.add(OpResult(0, name, 0, dtype, module, site, _phase(), verdict, kind, by_design, library, note))
    return out


def _library(caller, site):
    """The library frame that made the call, when it is not the user's line."""
    frame = library_frame(caller)
    if frame is not None and (site is None or (frame[0], frame[1]) != (site[0], site[1])):
        return frame
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:120] if text else ""


def _segment_result(c, host, shadows):
    """The op's result with the float64 shadows in place of their tensors (None when the host refuses)."""
    replace = {i: s.value.clone() for i, s in shadows.items()}
    try:
        with c.host_autocast():
            return host.with_values(replace)
    except Exception:  # noqa: BLE001 - the segment cannot be followed through this op
        return None


def _judge_output(c, name, host, k, npu_t, host_t, seg_t, shadows, group, site, caller):
    """``(kind, verdict, dtype, by_design, note)`` for output ``k``, ``("skip", ..., reason key)``, or None."""
    import torch

    if npu_t is None:
        return None
    dtype = str(npu_t.dtype).replace("torch.", "")
    if npu_t.device.type != c.device:
        if seg_t is not None and shadows and isinstance(seg_t, torch.Tensor):
            first = next(iter(shadows.values()))
            v = judge_return(name, npu_t, seg_t)
            return _segment_verdict(v, dtype, first)
        return ("skip", Verdict("benchmark", False), dtype, "", "to_host")
    if c.max_numel is not None and npu_t.numel() > c.max_numel:
        return ("skip", Verdict("benchmark", False), dtype, "", "max_numel")
    first = next(iter(shadows.values())) if shadows else None
    if seg_t is not None and isinstance(seg_t, torch.Tensor):
        if c.segments.wider(npu_t, seg_t):
            c.segments.carry(npu_t, seg_t, first)
        else:
            return _segment_verdict(judge_return(name, npu_t, seg_t), dtype, first)
    if host_t is None or not isinstance(host_t, torch.Tensor):
        return None
    if c.segments.wider(npu_t, host_t):  # torch_npu's downcast: follow the float64 value instead
        c.segments.start(npu_t, host_t, site, library_frame(caller))
        return ("skip", Verdict("benchmark", False), dtype, "", "downcast")
    npu_h = npu_t.detach().to("cpu")
    fused = name.startswith("npu::")  # computes in float32 inside whatever its dtype
    hf32 = bool(group) and c.hf32[group] and (npu_t.dtype == torch.float32 or fused)
    tf32 = bool(group) and c.tf32[group]  # host_t is then the TF32 computation

    def exact():
        with c.host_autocast():
            return _tensors(host.standin())[k]

    if _same(npu_h, host_t):
        if hf32 and not (fused and tf32 and _same(npu_h, exact())):
            return (AS_ON_ASCEND, Verdict("binary_consistency", False), dtype, "hf32_" + group, "")
        return (PASSED, Verdict("binary_consistency", False), dtype, "", "")
    if tf32 and _same(npu_h, exact()):  # the NPU computed exactly where CUDA's TF32 would not
        return (PASSED, Verdict("binary_consistency", False), dtype, "", "")
    golden = host.golden()
    gold_t = _tensors(golden)[k] if golden is not None else None
    if gold_t is None or not isinstance(gold_t, torch.Tensor) or gold_t.shape != host_t.shape:
        gold_t = host_t.to(torch.float64) if host_t.is_floating_point() else host_t
    v = judge(name, npu_h, host_t, gold_t)
    if hf32:
        if v.departs and not tf32:
            with c.host_autocast():
                rounded = _tensors(host.standin(tf32=True))[k]
            v2 = judge(name, npu_h, rounded, gold_t)
            return (AS_ON_ASCEND, v, dtype, "hf32_" + group, "") if not v2.departs else (DEPARTURE, v2, dtype, "", "")
        return (DEPARTURE, v, dtype, "", "") if v.departs else (AS_ON_ASCEND, v, dtype, "hf32_" + group, "")
    return (DEPARTURE if v.departs else PASSED, v, dtype, "", "")


def _segment_verdict(v: Verdict, dtype: str, shadow):
    start = shadow.start if shadow is not None else None
    note = f"float64 segment started at {start[0]}:{start[1]}" if start else "float64 segment"
    return (DEPARTURE if v.departs else AS_ON_ASCEND, v, dtype, "float64", note)
