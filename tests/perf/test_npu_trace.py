"""The advisor on a profiler trace instead of a live run: torch's own Chrome trace (made here, on the
CPU, by torch.profiler) and the same trace in torch_npu's trace_view.json encoding."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ascend_compat.perf.npu_trace import TraceError, read_trace
from ascend_compat.perf.rules import analyze

LOOP = '''
import torch
torch.manual_seed(0)
from torch.profiler import ProfilerActivity, profile, schedule
w = torch.randn(64, 64, requires_grad=True)


def train_step(x):                                                      # DEF
    p = torch.softmax(x @ w, -1)
    loss = -torch.log(p).mean()
    loss.backward()
    value = loss.item()
    m = torch.mode(x.flatten()).values
    return value


with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True,
             schedule=schedule(wait=0, warmup=1, active=3, repeat=1),
             on_trace_ready=lambda p: p.export_chrome_trace(TRACE)) as prof:
    for step in range(4):
        train_step(torch.randn(8, 64))
        prof.step()
'''


@pytest.fixture(scope="module")
def torch_trace(tmp_path_factory):
    from subproc import check, run_python

    folder = tmp_path_factory.mktemp("torch_trace")
    script = folder / "loop.py"
    script.write_text(LOOP.replace("TRACE", repr(str(folder / "trace.json"))))
    check(run_python(f"exec(compile(open({str(script)!r}).read(), {str(script)!r}, 'exec'))"))
    return script, folder / "trace.json"


def def_line(script: Path) -> int:
    return next(n for n, line in enumerate(script.read_text().splitlines(), 1) if "# DEF" in line)


def sites(report, script: Path) -> set:
    return {(f.rule, f.site[1]) for f in report.findings if f.site and os.path.samefile(f.site[0], script)}


def test_torch_chrome_trace_gives_the_same_findings(torch_trace):
    """torch's python_function spans name functions by their definition line, so a torch trace
    points at the innermost user function (torch_npu's "Call stack" has the statement's line)."""
    script, trace = torch_trace
    record = read_trace(str(trace))
    assert record.source == "trace" and len(record.steps) == 3
    report = analyze(record)
    line = def_line(script)
    assert {("unfused-loss", line), ("device-sync", line), ("cpu-fallback", line), ("fp32-matmul", line)} \
        <= sites(report, script)
    fallback = next(f for f in report.findings if f.rule == "cpu-fallback")
    assert "aten::mode" in fallback.title and fallback.weight["calls_per_step"] == 1


def npu_op(name: str, ts: float, dims: list, types: list, stack: list) -> dict:
    """A framework op as torch_npu writes it in trace_view.json: ``Input Dims`` one comma-joined
    shape per input, ``;``-joined; ``Input type`` ``;``-joined; ``Call stack`` innermost first; every
    ``;`` then written as ``;\\r\\n`` (its TorchOpBean)."""
    return {"ph": "X", "name": name, "pid": 7, "tid": 7, "ts": f"{ts:.3f}", "dur": 1.0, "cat": "cpu_op",
            "args": {"Sequence number": -1, "Fwd thread id": 0,
                     "Input Dims": ";\r\n".join(",".join(map(str, d)) for d in dims),
                     "Input type": ";\r\n".join(types), "Call stack": ";\r\n".join(stack)}}


def test_torch_npu_result_directory(tmp_path):
    lib = "/usr/lib/python3.10/site-packages/torch/nn/modules/module.py(1532): _call_impl"
    events = [{"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "Python"}}]
    for step, seq in ((1, 12), (2, 16)):
        base = step * 1000.0
        events.append({"ph": "X", "name": f"ProfilerStep#{step}", "pid": 7, "tid": 7, "ts": f"{base:.3f}",
                       "dur": 900.0, "cat": "cpu_op", "args": {}})
        events += [
            npu_op("aten::embedding", base + 1, [[100, 64], [4, seq]], ["float", "long int"],
                   ["train.py(40): step", lib]),
            npu_op("aten::mm", base + 2, [[4 * seq, 64], [64, 64]], ["float", "float"],
                   ["model.py(21): forward", lib, "train.py(41): step"]),
            npu_op("aten::_softmax", base + 3, [[4 * seq, 64], [], []], ["float", "Scalar", "bool"],
                   ["train.py(47): step"]),
            npu_op("aten::log", base + 4, [[4 * seq, 64]], ["float"], ["train.py(47): step"]),
            npu_op("aten::_local_scalar_dense", base + 5, [[]], ["float"], ["train.py(50): step"]),
            npu_op("aten::mode", base + 6, [[4 * seq], [], []], ["float", "Scalar", "bool"],
                   ["train.py(55): step"]),
        ]
    result = tmp_path / "worker0_1234_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    result.mkdir(parents=True)
    (result / "trace_view.json").write_text(json.dumps(events))  # torch_npu writes a bare list
    report = analyze(read_trace(str(tmp_path)))
    got = {(f.rule, f.site[0], f.site[1]) for f in report.findings}
    assert got == {("shape-churn", "train.py", 40), ("fp32-matmul", "model.py", 21),
                   ("unfused-loss", "train.py", 47), ("device-sync", "train.py", 50),
                   ("cpu-fallback", "train.py", 55)}


@pytest.mark.parametrize("content,message", [
    (None, "no ASCEND_PROFILER_OUTPUT/trace_view.json"),
    ("{not json", "cannot read the trace"),
    ('{"traceEvents": 3}', "not a Chrome trace"),
])
def test_bad_traces_are_explained(tmp_path, content, message):
    path = tmp_path
    if content is not None:
        path = tmp_path / "t.json"
        path.write_text(content)
    with pytest.raises(TraceError, match=message):
        read_trace(str(path))


def test_cli_from_trace(torch_trace):
    import subprocess
    import sys

    from subproc import clean_env

    script, trace = torch_trace
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "profile", "--from-trace", str(trace),
                           "--fail-on", "high"], capture_output=True, text=True, timeout=300, env=clean_env())
    assert proc.returncode == 1, proc.stderr
    assert "on a profiler trace" in proc.stdout and "device-sync" in proc.stdout
