"""Read the recorded steps from a profiler trace taken on the cluster, for the same rules.

Accepted input (:func:`read_trace`):

* torch_npu's profiler result: a directory holding ``ASCEND_PROFILER_OUTPUT/trace_view.json``
  (searched below the given directory), or that JSON file itself. torch_npu writes framework ops as
  Chrome-trace ``X`` events whose ``args`` carry ``"Input Dims"`` (``"4,16;\\r\\n16,32"``: one
  comma-joined shape per input, ``;``-separated), ``"Input type"`` (``"float;\\r\\nfloat"``) and,
  with ``with_stack=True``, ``"Call stack"`` (``"train.py(12): step;\\r\\n..."``, innermost first);
* torch's own ``export_chrome_trace`` output, where ``"Input Dims"`` is a list of shapes and
  ``"Input type"`` a list of type names.

Steps are the ``ProfilerStep#N`` spans both profilers write (``schedule`` + ``prof.step()``); ops
outside every step are left out, and a trace without steps is one step. What a trace cannot show is
left out rather than guessed: tensor identity (``unfused-loss`` is matched by an ``aten::log``
directly after a softmax at the same source line), copy directions, pinned memory. CPU fallbacks
are judged by the native-op table of the newest known torch_npu (``ascend_compat.data``).
"""
from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ascend_compat.perf.events import OpEvent, Site, StepRecord
from ascend_compat.perf.record import DATA_DEPENDENT

__all__ = ["read_trace", "TraceError"]

_FLOP_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::convolution")
_DTYPES = {"float": "float32", "c10::half": "float16", "half": "float16", "c10::bfloat16": "bfloat16",
           "bfloat16": "bfloat16", "double": "float64", "long int": "int64", "int": "int32", "bool": "bool"}
_FRAME = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): (?P<func>.+)$")
_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_LIBRARY = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep, os.sep + "torch" + os.sep,
            os.sep + "ascend_compat" + os.sep, "<frozen", os.sep + "lib" + os.sep + "python3")


class TraceError(ValueError):
    """The path is not a profiler trace this reader understands (the message says why)."""


def read_trace(path: str) -> StepRecord:
    """The :class:`StepRecord` of the trace at ``path`` (a JSON file or a torch_npu result directory)."""
    file = _find(Path(path))
    try:
        with open(file, "rb") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TraceError(f"cannot read the trace {str(file)!r}: {exc}") from None
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise TraceError(f"{str(file)!r} is not a Chrome trace (no traceEvents list)")
    return _to_record([e for e in events if isinstance(e, dict)])


def _find(path: Path) -> Path:
    if path.is_file():
        return path
    if path.is_dir():
        found = sorted(path.rglob("trace_view.json"))
        if found:
            return found[0]
        raise TraceError(f"no ASCEND_PROFILER_OUTPUT/trace_view.json below {str(path)!r}: give the torch_npu "
                         "profiler's result directory or a Chrome-trace JSON file")
    raise TraceError(f"{str(path)!r} does not exist")


def _to_record(raw: List[Dict[str, Any]]) -> StepRecord:
    steps: List[Tuple[int, float, float]] = []
    ops: List[Dict[str, Any]] = []
    frames: List[Dict[str, Any]] = []
    for e in raw:
        if e.get("ph") != "X":
            continue
        name = str(e.get("name", ""))
        match = _STEP.match(name)
        if match:
            start = float(e.get("ts", 0))
            steps.append((int(match.group(1)), start, start + float(e.get("dur", 0))))
        elif e.get("cat") == "python_function":
            frames.append(e)
        elif "::" in name and isinstance(e.get("args"), dict):
            ops.append(e)
    if frames:  # torch's own traces give stacks as python_function spans, not a "Call stack" argument
        _attach_stacks(ops, frames)
    record = StepRecord(source="trace")
    if not steps:
        record.notes.append("the trace has no ProfilerStep spans: everything in it is reported as one step")
    ops.sort(key=lambda e: float(e.get("ts", 0)))
    previous: Optional[OpEvent] = None
    for e in ops:
        ts = float(e.get("ts", 0))
        step = _step_of(ts, steps)
        if step is None:
            continue
        event = _event(e, step, ts)
        if event.name == "aten::log" and previous is not None and previous.site == event.site \
                and previous.name in ("aten::_softmax", "aten::softmax"):
            event.tags = event.tags + ("log_of_softmax",)
        previous = event
        record.events.append(event)
        if step not in record.steps:
            record.steps.append(step)
    record.steps.sort()
    for number, start, end in steps:
        if number in record.steps:
            record.step_ns[number] = (int(start * 1000), int(end * 1000))
    return record


def _attach_stacks(ops: List[Dict[str, Any]], frames: List[Dict[str, Any]]) -> None:
    """Give each op without a ``"Call stack"`` the innermost user frame among the python_function
    spans of its thread that contain it (one sweep in time order)."""
    spans = sorted(((float(f.get("ts", 0)), float(f.get("ts", 0)) + float(f.get("dur", 0)), f.get("tid"),
                     str(f.get("name", ""))) for f in frames), key=lambda x: (x[0], -x[1]))
    open_spans: Dict[Any, List[Tuple[float, str]]] = {}
    i = 0
    for op in sorted(ops, key=lambda e: float(e.get("ts", 0))):
        ts = float(op.get("ts", 0))
        while i < len(spans) and spans[i][0] <= ts:
            start, end, tid, name = spans[i]
            open_spans.setdefault(tid, []).append((end, name))
            i += 1
        stack = open_spans.get(op.get("tid"), [])
        stack[:] = [(end, name) for end, name in stack if end >= ts]
        if "Call stack" not in op["args"] and stack:
            op["args"]["Call stack"] = [name for _, name in reversed(stack)]


def _step_of(ts: float, steps: List[Tuple[int, float, float]]) -> Optional[int]:
    if not steps:
        return 0
    for number, start, end in steps:
        if start <= ts <= end:
            return number
    return None


def _event(e: Dict[str, Any], step: int, ts: float) -> OpEvent:
    args = e["args"]
    name = str(e["name"])
    shapes = _shapes(args.get("Input Dims"))
    dtypes = tuple(_DTYPES.get(t.strip().lower(), t.strip()) for t in _list(args.get("Input type")))
    event = OpEvent(step, name, _kind(name), _site(args.get("Call stack")), "", shapes, dtypes,
                    max((_numel(s) for s in shapes), default=-1), start_ns=int(ts * 1000),
                    dur_ns=int(float(e.get("dur", 0)) * 1000))
    if name in ("aten::_local_scalar_dense",):
        event.sync = "item"
    elif name in DATA_DEPENDENT:
        event.sync = "data_dependent"
    if name in _FLOP_OPS:
        event.flops = _flops(name, shapes)
    if name == "aten::lift_fresh":
        event.tags = ("construct",)
    return event


def _list(value: Any) -> List[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    return [part.strip() for part in str(value).split(";")]


def _shapes(value: Any) -> Tuple[Tuple[int, ...], ...]:
    out = []
    if isinstance(value, list):
        for shape in value:
            if isinstance(shape, list) and all(isinstance(d, int) for d in shape):
                out.append(tuple(shape))
        return tuple(out)
    for part in _list(value):  # an empty part is a non-tensor input: kept so positions stay right
        try:
            out.append(tuple(int(d) for d in part.split(",")) if part else ())
        except ValueError:
            out.append(())
    return tuple(out)


def _numel(shape: Tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _flops(name: str, shapes: Tuple[Tuple[int, ...], ...]) -> int:
    try:
        if name == "aten::mm":
            (m, k), (_, n) = shapes[0], shapes[1]
            return 2 * m * k * n
        if name == "aten::addmm":
            (m, k), (_, n) = shapes[1], shapes[2]
            return 2 * m * k * n
        if name == "aten::bmm":
            (b, m, k), (_, _, n) = shapes[0], shapes[1]
            return 2 * b * m * k * n
        if name == "aten::baddbmm":
            (b, m, k), (_, _, n) = shapes[1], shapes[2]
            return 2 * b * m * k * n
        if name == "aten::convolution":  # stride and padding are not in the trace: output size ~ input size
            x, w = shapes[0], shapes[1]
            return 2 * x[0] * w[0] * _numel(w[1:]) * _numel(x[2:])
    except (IndexError, ValueError):
        return 0
    return 0


def _kind(name: str) -> str:
    if not name.startswith("aten::"):
        return "native" if name.startswith("npu::") else "other"
    from ascend_compat import data

    try:
        return "cpu_fallback" if _base_falls_back(name, data) else "native"
    except ValueError:
        return "other"


@functools.lru_cache(maxsize=None)
def _base_falls_back(name: str, data) -> bool:
    """A trace names the op without its overload: it falls back when no overload of it is native and
    the installed torch has no composite kernel for its default overload."""
    base = name.split("::", 1)[1]
    native = data.native_ops()
    if base in native or any(op.startswith(base + ".") for op in native):
        return False
    return data.would_fall_back(base)


def _site(stack: Any) -> Optional[Site]:
    for frame in _list(stack):
        match = _FRAME.match(frame)
        if match and not any(part in os.sep + match.group("file") for part in _LIBRARY):
            return match.group("file"), int(match.group("line")), match.group("func")
    return None
