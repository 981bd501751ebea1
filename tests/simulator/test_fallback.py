"""Simulated torch_npu CPU fallback: warning text, once per op, listeners,
composite ops are not fallbacks, TORCH_NPU_FALLBACK_CPU_DISABLE=1, per-version tables."""
from __future__ import annotations

import warnings

import pytest
import torch

from ascend_compat import data
from ascend_compat.simulator import _fallback, events
from tests.simulator._subproc import check, run_python

WARN = ("CAUTION: The operator '{}' is not currently supported on the NPU backend and will fall back "
        "to run on the CPU. This may have performance implications.")


@pytest.fixture
def caught(capfd):
    """``caught(fn)``: the torch_npu warnings ``fn`` wrote to stderr (torch_npu prints them through
    c10's base handler, not Python's warnings), with no Python warning raised."""
    def run(fn):
        capfd.readouterr()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a Python warning would fail here, as under -W error
            fn()
        err = capfd.readouterr().err
        return [line.split("] Warning: ", 1)[1].rsplit(" (function ", 1)[0]
                for line in err.splitlines() if "] Warning: CAUTION" in line]
    return run


def test_precondition_op_tables():
    native = data.native_ops()
    # the ops used below: mode has no NPU kernel; heaviside has neither functional nor out kernel;
    # gcd has only its out kernel (structured: not a fallback); square is CompositeImplicitAutograd.
    assert "mode" not in native and "heaviside" not in native and "heaviside.out" not in native
    assert "gcd" not in native and "gcd.out" in native and "square" not in native


def test_warns_exact_text_once_per_op(caught):
    x = torch.tensor([1.0, 2.0, 2.0, 3.0], device="npu")
    _fallback._warned.discard("aten::mode")
    first = caught(lambda: torch.mode(x))
    assert first == [WARN.format("aten::mode")]
    assert caught(lambda: torch.mode(x)) == []
    values, _ = torch.mode(x)
    assert values.item() == 2.0 and values.device.type == "npu"


def test_structured_op_reports_out_overload(caught):
    a = torch.tensor([-1.0, 0.0, 2.0], device="npu")
    _fallback._warned.discard("aten::heaviside.out")
    assert caught(lambda: torch.heaviside(a, torch.tensor([0.5], device="npu"))) == [
        WARN.format("aten::heaviside.out")]


def test_native_and_composite_ops_do_not_warn(caught):
    a = torch.tensor([4, 6], device="npu")
    assert caught(lambda: torch.gcd(a, torch.tensor([6, 9], device="npu"))) == []  # native out kernel
    assert caught(lambda: torch.square(a.float())) == []  # decomposes into native ops
    assert caught(lambda: (a.float() + 1).relu()) == []


def test_listener_called_on_every_fallback_call():
    seen = []
    events.add_fallback_listener(seen.append)
    events.add_fallback_listener(seen.append)  # idempotent
    try:
        x = torch.tensor([1.0, 1.0], device="npu")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.mode(x)
            torch.mode(x)
        torch.square(x)
    finally:
        events.remove_fallback_listener(seen.append)
    assert seen == ["aten::mode", "aten::mode"]
    with pytest.raises(TypeError):
        events.add_fallback_listener("not callable")


def test_fallback_disabled_raises_torch_npu_wording():
    proc = run_python("""
        import torch
        from ascend_compat import simulator
        simulator.install()
        x = torch.tensor([1.0, 2.0], device="npu")
        print((x + 1).tolist())  # native ops still run
        try:
            torch.mode(x)
        except RuntimeError as e:
            print("ERR|" + str(e).replace("\\n", "||"))
    """, env={"TORCH_NPU_FALLBACK_CPU_DISABLE": "1"})
    out = check(proc)
    assert "[2.0, 3.0]" in out
    err = out.split("ERR|", 1)[1]
    assert err.startswith("The operator 'aten::mode' would execute its main computation on CPU through "
                          "dispatcher backend fallback, but CPU fallback is disabled by "
                          "TORCH_NPU_FALLBACK_CPU_DISABLE=1.||[ERROR] ")
    assert "ERR01007 OPS feature not supported" in err


def test_emulated_version_changes_coverage():
    # torch_npu 2.1 had no NPU kernel for _fused_adam_; the newest release has one.
    assert "_fused_adam_" not in data.native_ops("2.1") and "_fused_adam_" in data.native_ops()
    code = """
        import warnings, torch
        from ascend_compat import simulator
        simulator.install(torch_npu_version=VERSION)
        p = torch.nn.Parameter(torch.ones(3, device="npu"))
        p.grad = torch.ones(3, device="npu")
        opt = torch.optim.Adam([p], lr=0.1, fused=True)
        opt.step()
        print("value", round(p[0].item(), 4))
    """
    old = run_python(code.replace("VERSION", "'2.1.0'"))
    assert WARN.format("aten::_fused_adam_") in old.stderr and "value 0.9" in check(old)
    new = run_python(code.replace("VERSION", "None"))
    assert "CAUTION" not in new.stderr and "value 0.9" in check(new)


def test_warning_goes_to_stderr_on_rank_0_only_and_can_be_disabled():
    code = """
        import warnings, torch
        warnings.simplefilter("error")  # torch_npu's warning is not a Python warning
        from ascend_compat import simulator
        simulator.install()
        torch.mode(torch.tensor([1.0, 1.0], device="npu"))
        print("ran")
    """
    line = WARN.format("aten::mode") + " (function npu_cpu_fallback)"
    assert line in run_python(code).stderr
    assert line in run_python(code, env={"RANK": "0"}).stderr
    for env in ({"RANK": "1"}, {"TORCH_NPU_WARNING_DISABLE": "1"}, {"TORCH_NPU_DISABLED_WARNING": "1"}):
        proc = run_python(code, env=env)
        assert "ran" in check(proc) and "CAUTION" not in proc.stderr, env
