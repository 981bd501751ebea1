"""The op plan cache (``_plan.plan_for``) keys on everything a plan is computed from: the mode
an op is reached in, the native-op table (which ops fall back), the special-kernel table; a change
between two calls of the same op gives the next call the new plan, also through the per-op
kernels registered at install."""
from __future__ import annotations

import torch

from ascend_compat.simulator import _fallback, _plan
from tests.simulator._subproc import run_python


def test_plans_are_keyed_by_mode():
    op = torch.ops.aten.bitwise_left_shift.Tensor
    plain, structured = _plan.plan_for(op, "plain"), _plan.plan_for(op, "structured")
    assert plain is not structured
    assert (plain.mode, structured.mode) == ("plain", "structured")
    assert plain.fallback == _fallback.fallback_name(op, "plain")
    assert structured.fallback == _fallback.fallback_name(op, "structured")
    assert _plan.plan_for(op, "structured") is structured  # cached


def test_a_changed_native_table_or_special_table_changes_the_next_call():
    proc = run_python("""
import torch
from ascend_compat import simulator
simulator.install(torch_npu_version="2.14")
from ascend_compat.simulator import _fallback, _plan, events
seen = []
events.add_fallback_listener(seen.append)
a = torch.tensor([1, 2], device="npu")
torch.bitwise_left_shift(a, a)
print("2.14", seen)
_fallback.init("2.1")  # the emulated version's table changes between two calls of the same op
print("result", torch.bitwise_left_shift(a, a).tolist())
print("2.1", seen)
_plan.register_special({"aten::bitwise_left_shift.Tensor": lambda op, x, y: x.neg()})
print("special", torch.bitwise_left_shift(a, a).tolist())
""", env={"TORCH_NPU_WARNING_DISABLE": "1"})
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert lines["2.14"] == "[]"  # native in torch_npu 2.14
    assert lines["result"] == "[2, 8]"
    assert lines["2.1"] == "['aten::bitwise_left_shift.Tensor_out']"  # a fallback in 2.1
    assert lines["special"] == "[-1, -2]"
