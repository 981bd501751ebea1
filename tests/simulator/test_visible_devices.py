"""``ASCEND_RT_VISIBLE_DEVICES`` and allocation agree: torch_npu's ``device_count()`` is 0 for a
list that is not strictly ascending (``"0,0"``, ``"1,0"``: its ``_device_count_ascend_hal``, "rts
need ascending order") or empty, and with no visible device nothing can be allocated either
(the device cannot be set at initialisation)."""
from __future__ import annotations

import pytest

from tests.simulator._subproc import run_python

CODE = """
import torch
from ascend_compat import simulator
simulator.install(devices=2)
print("count", torch.npu.device_count(), torch.npu.is_available())
for name, make in (("empty", lambda: torch.empty(2, device="npu")), ("to", lambda: torch.ones(2).to("npu")),
                   ("randn", lambda: torch.randn(2, device="npu:0"))):
    try:
        print(name, "ok", make().device)
    except RuntimeError as exc:
        print(name, "refused", str(exc).splitlines()[0])
"""


@pytest.mark.parametrize("value", ["0,0", "1,0", ""])
def test_no_visible_device_means_no_allocation(value):
    proc = run_python(CODE, env={"ASCEND_RT_VISIBLE_DEVICES": value})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "count 0 False" in out
    for name in ("empty", "to", "randn"):
        assert f"{name} refused Invalid device ID. Device npu:0 does not exist: no NPU is visible" in out, out


def test_visible_devices_allocate_on_the_renumbered_ids():
    proc = run_python(CODE.replace('"npu:0"', '"npu:1"'), env={"ASCEND_RT_VISIBLE_DEVICES": "0,1"})
    assert proc.returncode == 0, proc.stderr
    if "count 2 True" not in proc.stdout:  # two devices need the C++ guard
        pytest.skip(f"two simulated devices unavailable here: {proc.stderr[-300:]}")
    assert "empty ok npu:0" in proc.stdout and "to ok npu:0" in proc.stdout and "randn ok npu:1" in proc.stdout
