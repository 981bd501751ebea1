"""simulator.faults: the ASCEND_COMPAT_SIM_FAULTS grammar (@rank, @call, kinds) and what each kind does,
on the right rank from the right call."""
from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from _subproc import check, clean_env, run_python
from ascend_compat.simulator import faults


def test_grammar_with_rank_and_call():
    f = faults.parse("aten::addmm=error:507015@rank=3@call=40; aten::gelu=bias:0.5;c10d::allreduce_=count:7@call=2")
    assert f[0] == faults.Fault("aten::addmm", "error", 507015.0, 3, 40)
    assert f[1] == faults.Fault("aten::gelu", "bias", 0.5, None, 1)
    assert f[2].collective and f[2].kind == "count" and f[2].value == 7 and f[2].call == 2
    assert faults.parse("aten::mm=hang@rank=1")[0] == faults.Fault("aten::mm", "hang", 0.0, 1, 1)
    assert faults.parse("aten::mm=slow:2.5")[0].value == 2.5
    assert faults.parse("aten::mm=kill@call=3")[0].call == 3


@pytest.mark.parametrize("spec, says", [
    ("aten::mm", "write OP=KIND"),
    ("aten::mm=", "the kind must be one of"),
    ("aten::mm=explode", "the kind must be one of"),
    ("mm=nan", "namespace"),
    ("aten::mm=error:x", "error needs a number"),
    ("aten::mm=nan@rank=a", "@rank=R or @call=N"),
    ("aten::mm=nan@call=0", "@call counts from 1"),
    ("aten::mm=nan@who=1", "@rank=R or @call=N"),
    ("aten::mm=count:3", "applies to collectives"),
    ("c10d::allreduce_=bias:1", "collectives take the kinds"),
    ("aten::mm=slow:-1", "slow needs a number >= 0"),
])
def test_bad_entries_say_what_is_wrong(spec, says):
    with pytest.raises(faults.FaultError, match=says):
        faults.parse(spec)


def test_rank_and_call_select_when_an_op_fails_and_the_runtime_writes_its_plog(tmp_path):
    out = check(run_python("""
import ascend_compat.simulator as sim
sim.install()
import torch
from ascend_compat.simulator import faults
a = torch.ones(2, 2, device="npu")
with faults.inject("aten::mm", "error", 507015, rank=1):
    torch.mm(a, a)                      # RANK=0: not this rank
with faults.inject("aten::mm", "error", 507015, rank=0, call=3):
    torch.mm(a, a); torch.mm(a, a)      # calls 1 and 2 pass
    try:
        torch.mm(a, a)
    except RuntimeError as exc:
        print("RAISED", str(exc).splitlines()[0])
""", {"RANK": "0", "ASCEND_PROCESS_LOG_PATH": str(tmp_path)}))
    assert "RAISED NPU function error: call aclnnMm failed, error code is 507015" in out
    plog = next((tmp_path / "debug" / "plog").iterdir()).read_text()
    assert "runtime result = 507015" in plog and "[aicore exception]" in plog


def test_slow_sleeps_then_runs_and_kill_ends_the_process_by_sigkill():
    out = check(run_python("""
import time
import ascend_compat.simulator as sim
sim.install()
import torch
from ascend_compat.simulator import faults
a = torch.ones(2, device="npu")
with faults.inject("aten::add.Tensor", "slow", 0.4, call=2):
    t0 = time.perf_counter(); a + a; fast = time.perf_counter() - t0
    t0 = time.perf_counter(); b = a + a; slow = time.perf_counter() - t0
print("TIMES", fast < 0.3, slow >= 0.4, b.tolist())
"""))
    assert "TIMES True True [2.0, 2.0]" in out
    proc = run_python("""
import ascend_compat.simulator as sim
sim.install_from_env()
import torch
a = torch.ones(2, device="npu")
a + a
print("after the first call", flush=True)
a + a
print("never printed")
""", {"ASCEND_COMPAT_SIM_FAULTS": "aten::add.Tensor=kill@call=2"})
    assert proc.returncode == -signal.SIGKILL and "after the first call" in proc.stdout
    assert "never printed" not in proc.stdout


def test_hang_blocks_the_op_forever():
    code = ("import ascend_compat.simulator as sim\nsim.install_from_env()\nimport torch\n"
            "a = torch.ones(2, device='npu')\nprint('before', flush=True)\na + a\nprint('after', flush=True)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env=clean_env({"ASCEND_COMPAT_SIM_FAULTS": "aten::add.Tensor=hang"}))
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=20)
    proc.kill()
    out = proc.communicate()[0]
    assert "before" in out and "after" not in out
