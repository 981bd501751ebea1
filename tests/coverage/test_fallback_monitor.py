"""FallbackMonitor: exact per-op counts and first user frames on the simulated NPU,
by the simulator's listener and by the dispatch-mode observer, and the no-NPU case in process.

Simulator state is process-global, so everything that needs it runs in a fresh interpreter."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from ascend_compat.coverage.fallback import FallbackMonitor, FallbackRecord, FallbackReport, Frame


def _run(code: str, env=None) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_COMPAT_", "TORCH_NPU_"))}
    clean.update(env or {})
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=clean, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


def _line_of(code: str, marker: str) -> int:
    """1-based line of ``marker`` in the dedented ``code`` (as the interpreter numbers ``-c`` code)."""
    lines = textwrap.dedent(code).splitlines()
    return next(i for i, line in enumerate(lines, 1) if marker in line)


SCRIPT = """
    import contextlib, io, json, sys
    import torch
    from ascend_compat import simulator
    simulator.install(torch_npu_version=VERSION)
    from ascend_compat.doctor import FallbackMonitor

    x = torch.tensor([1.0, 2.0, 2.0, 3.0], device="npu")
    h = torch.tensor([0.5], device="npu")
    rates = torch.tensor([1.0, 4.0], device="npu")
    with contextlib.redirect_stderr(io.StringIO()) as caught:  # torch_npu prints its warnings on stderr
        with FallbackMonitor(method=METHOD) as monitor:
            for _ in range(47):
                values, _ = torch.mode(x)  # MARK-mode
            for _ in range(3):
                torch.poisson(rates)  # MARK-poisson
            stepped = torch.heaviside(x - 2, h)  # MARK-heaviside
            y = torch.nn.functional.gelu(x).square().sum()  # native / composite: not counted
            cpu = torch.mode(torch.tensor([5.0, 5.0]))  # CPU tensors never fall back
    report = monitor.report
    print(json.dumps({
        "summary": report.summary(), "method": report.method, "data": report.to_dict(),
        "caution": caught.getvalue().count("] Warning: CAUTION"),
        "mode_value": values.item(), "stepped": stepped.tolist(), "y": y.item(),
        "expected_y": torch.nn.functional.gelu(x.cpu()).square().sum().item(),
    }))
"""


@pytest.mark.parametrize("method", ["auto", "dispatch"])
def test_counts_and_first_frames_on_the_simulator(method):
    code = SCRIPT.replace("VERSION", "None").replace("METHOD", repr(method))
    out = json.loads(_run(code).strip().splitlines()[-1])
    assert out["method"] == ("events" if method == "auto" else "dispatch")
    assert out["summary"] == ("3 CPU fallback(s): aten::mode (47 calls), aten::poisson (3 calls), "
                              "aten::heaviside.out (1 call)")
    ops = {op["name"]: op for op in out["data"]["ops"]}
    for name, marker in (("aten::mode", "MARK-mode"), ("aten::poisson", "MARK-poisson"),
                         ("aten::heaviside.out", "MARK-heaviside")):
        assert ops[name]["first_frame"] == {"file": "<string>", "line": _line_of(code, marker),
                                            "function": "<module>"}
    assert out["data"]["total_calls"] == 51
    # torch_npu warns once per op; the monitor counted every call
    assert out["caution"] == 3
    # results are unchanged by observation
    assert out["mode_value"] == 2.0 and out["stepped"] == [0.0, 0.5, 0.5, 1.0]
    assert out["y"] == pytest.approx(out["expected_y"], rel=1e-6)


def test_emulated_version_decides_what_falls_back():
    # torch_npu 2.1 has no _fused_adam_ kernel; the newest has one
    code = """
        import warnings, torch
        from ascend_compat import simulator
        simulator.install(torch_npu_version=VERSION)
        from ascend_compat.doctor import FallbackMonitor
        warnings.simplefilter("ignore")
        p = torch.nn.Parameter(torch.ones(3, device="npu"))
        p.grad = torch.ones(3, device="npu")
        opt = torch.optim.Adam([p], lr=0.1, fused=True)
        with FallbackMonitor() as m:
            for _ in range(4):
                opt.step()
        print(m.report.summary())
    """
    assert _run(code.replace("VERSION", "'2.1'")).strip() == "1 CPU fallback(s): aten::_fused_adam_ (4 calls)"
    assert _run(code.replace("VERSION", "None")).strip() == "no CPU fallbacks"


def test_threads_nesting_decorator_and_raise():
    code = """
        import threading, warnings, torch
        from ascend_compat import simulator
        simulator.install()
        from ascend_compat.doctor import FallbackMonitor
        from ascend_compat.coverage.fallback import CPUFallbackError
        warnings.simplefilter("ignore")
        x = torch.tensor([1.0, 2.0, 2.0], device="npu")

        # thread-safe counting: every thread's calls are counted, none lost
        with FallbackMonitor() as m:
            def work():
                for _ in range(50):
                    torch.mode(x)
            threads = [threading.Thread(target=work) for _ in range(4)]
            for t in threads: t.start()
            for t in threads: t.join()
        print("threads", m.report["aten::mode"].calls)

        # nesting: each monitor counts what ran inside it
        with FallbackMonitor() as outer:
            torch.mode(x)
            with FallbackMonitor() as inner:
                torch.mode(x); torch.mode(x)
            torch.mode(x)
        print("nested", outer.report["mode"].calls, inner.report["mode"].calls)

        # decorator: counts accumulate over calls; the monitor is inactive between them
        monitor = FallbackMonitor()
        @monitor
        def step():
            return torch.mode(x)
        step(); step(); torch.mode(x)
        print("decorated", monitor.report["mode"].calls, monitor.method)

        for method in ("events", "dispatch"):
            try:
                with FallbackMonitor(method=method, raise_on_fallback=True):
                    (x + 1).sum()
                    torch.mode(x)
                print("no error")
            except CPUFallbackError as e:
                print("raised", method, "aten::mode" in str(e) and "<string>" in str(e))
    """
    out = _run(code).splitlines()
    assert out[0] == "threads 200"
    assert out[1] == "nested 4 2"
    assert out[2] == "decorated 2 events"
    assert out[3:] == ["raised events True", "raised dispatch True"]


def test_dispatch_method_keeps_training_results_identical():
    code = """
        import torch
        from ascend_compat import simulator
        simulator.install()
        from ascend_compat.doctor import FallbackMonitor

        def train(observe):
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32),
                                        torch.nn.Linear(32, 4)).to("npu")
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            x = torch.randn(8, 16).to("npu")
            for _ in range(3):
                opt.zero_grad()
                loss = model(x).logsumexp(dim=1).mean()
                loss.backward()
                opt.step()
            return [p.detach().cpu() for p in model.parameters()], loss.item()

        plain = train(False)
        with FallbackMonitor(method="dispatch") as m:
            observed = train(True)
        print(all(torch.equal(a, b) for a, b in zip(plain[0], observed[0])), plain[1] == observed[1])
        print(m.report.summary())
    """
    assert _run(code).splitlines() == ["True True", "no CPU fallbacks"]


def test_dispatcher_predicate_reads_privateuse1_registrations():
    # The real-torch_npu path asks the dispatcher; on the simulator, ops it registers directly at
    # PrivateUse1 (structured functionals such as gelu) have a kernel, fallback ops (mode) do not.
    code = """
        import torch
        from ascend_compat import simulator
        simulator.install()
        from ascend_compat.observe import routing
        router = routing.Router(routing.dispatcher_predicate())
        print(router.route(torch.ops.aten.gelu.default)[0], router.route(torch.ops.aten.mode.default)[0],
              router.route(torch.ops.aten.square.default)[0])
    """
    assert _run(code).split() == ["native", "cpu_fallback", "composite"]


def test_without_an_npu_nothing_falls_back():
    # A fresh process: the pytest worker may have the simulator installed by another test module.
    code = """
        import torch
        import pytest
        from ascend_compat.coverage.fallback import FallbackMonitor
        with FallbackMonitor() as m:
            torch.mode(torch.tensor([1.0, 1.0, 2.0]))
        report = m.report
        assert m.method == "none" and report.summary() == "no CPU fallbacks" and len(report) == 0
        assert report.to_dict() == {"method": "none", "total_calls": 0, "summary": "no CPU fallbacks", "ops": []}
        with pytest.raises(RuntimeError, match="needs the simulated NPU"):
            with FallbackMonitor(method="events"):
                pass
        with pytest.raises(ValueError, match="method must be one of"):
            FallbackMonitor(method="warnings")
        print("ok")
    """
    assert _run(code).strip() == "ok"


def test_report_formatting():
    report = FallbackReport((FallbackRecord("aten::mode", 47, Frame("train.py", 12, "step")),
                             FallbackRecord("aten::poisson", 1, None)), "events")
    assert report.summary() == "2 CPU fallback(s): aten::mode (47 calls), aten::poisson (1 call)"
    assert report.text().splitlines()[1] == "  aten::mode: 47 call(s), first at train.py:12 in step"
    assert report.to_dict()["ops"][0] == {"name": "aten::mode", "calls": 47,
                                          "first_frame": {"file": "train.py", "line": 12, "function": "step"}}
    assert report["poisson"].calls == 1 and report.total_calls == 48
    with pytest.raises(KeyError):
        report["histc"]


def test_module_import_is_light():
    code = ("import sys; import ascend_compat.coverage.fallback, ascend_compat.coverage.audit;"
            "print([m for m in ('torch', 'numpy', 'ascend_compat.simulator') if m in sys.modules])")
    assert _run(code).strip() == "[]"
