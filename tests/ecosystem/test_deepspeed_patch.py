"""DeepSpeed on the simulated NPU: accelerator resolution, hccl, and a real 2-rank ZeRO-2 run."""
from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from _eco_libs import SCRIPTS, need, results, run

pytestmark = need("deepspeed", "deepspeed")
SIM = {"ASCEND_COMPAT_SIMULATE": "1", "DS_BUILD_OPS": "0"}


def test_accelerator_resolves_to_npu_and_fixes_apply():
    """With the shim's own DeepSpeed integration disabled: DeepSpeed's bug, then an explicit apply()."""
    code = (
        "import os, ascend_compat, torch\n"
        "os.environ.pop('ASCEND_HOME_PATH', None)\n"
        "from deepspeed.accelerator import get_accelerator\n"
        "acc = get_accelerator()\n"
        "print('ACC', acc._name, acc.communication_backend_name(), acc.device_name(0))\n"
        "try:\n"
        "    acc.create_op_builder('ShmCommBuilder')\n"
        "except KeyError as e:\n"
        "    print('UNPATCHED KeyError', e)\n"
        "print('FP64', acc.is_fp64_supported())\n"
        "from ascend_compat.ecosystem.integrations import deepspeed_patch\n"
        "assert deepspeed_patch.apply() > 0; assert deepspeed_patch.apply() == 0\n"
        "b = acc.create_op_builder('ShmCommBuilder')\n"
        "print('PATCHED', b.installed_cann_path(), acc.is_fp64_supported())\n"
        "ascend_compat.deactivate()\n"
        "print('REVERTED', acc.is_fp64_supported())\n")
    out = run(["python", "-c", code], {**SIM, "ASCEND_COMPAT_DISABLE": "deepspeed"}).stdout
    assert "ACC npu hccl npu:0" in out
    assert "UNPATCHED KeyError 'ASCEND_HOME_PATH'" in out  # DeepSpeed's own bug, reproduced
    assert "FP64 True" in out and "PATCHED None False" in out and "REVERTED True" in out


def test_shim_applies_the_fixes_by_itself():
    """No apply() call: the shim's activation fixes DeepSpeed; a later apply() changes nothing."""
    code = (
        "import os, ascend_compat, torch\n"
        "os.environ.pop('ASCEND_HOME_PATH', None)\n"
        "from deepspeed.accelerator import get_accelerator\n"
        "acc = get_accelerator()\n"
        "b = acc.create_op_builder('ShmCommBuilder')\n"
        "print('AUTO', acc._name, b.installed_cann_path(), acc.is_fp64_supported())\n"
        "from ascend_compat.ecosystem.integrations import deepspeed_patch\n"
        "print('AGAIN', deepspeed_patch.apply())\n"
        "ascend_compat.deactivate()\n"
        "print('REVERTED', acc.is_fp64_supported())\n")
    out = run(["python", "-c", code], SIM).stdout
    assert "AUTO npu None False" in out and "AGAIN 0" in out and "REVERTED True" in out, out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_zero2_two_processes_torchrun_hccl():
    """torchrun, 2 ranks, ZeRO stage 2, ``init_distributed(dist_backend="nccl")`` as GPU code says (~15 s)."""
    torchrun = Path(sys.executable).with_name("torchrun")
    proc = run([str(torchrun), "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
                "--master_port", str(_free_port()), "-m", "ascend_compat", "run", "--simulate",
                str(SCRIPTS / "ds_train.py"), "--stage", "2", "--apply"], {"DS_BUILD_OPS": "0"}, timeout=180)
    ranks = sorted(results(proc), key=lambda r: r["rank"])
    assert [r["rank"] for r in ranks] == [0, 1] and all(r["world"] == 2 for r in ranks)
    assert [r["device"] for r in ranks] == ["npu:0", "npu:1"]
    for r in ranks:
        assert r["accelerator"] == "npu" and r["comm"] == "hccl" and r["dist_backend"] == "hccl"
        assert r["stage"] == 2 and r["param_device"] == r["device"]
        assert r["in_sync"]  # partitioned optimizer states, replicas identical after all-gather
        assert r["losses"][-1] < 0.8 * r["losses"][0]


@pytest.mark.slow
def test_zero3_zero_init_with_cpu_offload_two_ranks():
    """ZeRO-3 with the model built under ``deepspeed.zero.Init`` (which wraps ``torch.empty`` & co. to add
    the device) and the optimizer offloaded to the CPU: trains on 2 simulated ranks (~20 s; issue 23,
    item 12: the simulator's own allocations used to recurse through the wrappers)."""
    torchrun = Path(sys.executable).with_name("torchrun")
    proc = run([str(torchrun), "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
                "--master_port", str(_free_port()), "-m", "ascend_compat", "run", "--simulate",
                str(SCRIPTS / "ds_train.py"), "--stage", "3", "--zero-init", "--offload"],
               {"DS_BUILD_OPS": "0"}, timeout=240)
    ranks = sorted(results(proc), key=lambda r: r["rank"])
    assert [r["device"] for r in ranks] == ["npu:0", "npu:1"]
    for r in ranks:
        assert r["stage"] == 3 and r["param_device"] == r["device"] and r["in_sync"]
        assert r["losses"][-1] < 0.8 * r["losses"][0]


def test_op_builders_without_cann_say_nothing_the_user_cannot_act_on():
    """Was: every DeepSpeed rank printed "<op> ascend_cann is missing, npu ops cannot be compiled!" 21
    times on the simulated NPU (CANN is not simulated; DeepSpeed runs its Python paths, as it does
    without CANN). On the simulator: silent; with torch_npu: one line per process naming the fix."""
    code = (
        "import os, ascend_compat, torch\n"
        "os.environ.pop('ASCEND_HOME_PATH', None)\n"
        "from deepspeed.accelerator import get_accelerator\n"
        "acc = get_accelerator()\n"
        "names = ['FusedAdamBuilder', 'CPUAdamBuilder', 'ShmCommBuilder', 'AsyncIOBuilder']\n"
        "built = [acc.create_op_builder(n) for n in names]\n"
        "print('BUILT', len(built), [b.cann_defs() for b in built[:1]])\n")
    proc = run(["python", "-c", code], SIM)
    assert "BUILT 4 ['-D__DISABLE_CANN__']" in proc.stdout
    assert "ascend_cann is missing" not in proc.stdout + proc.stderr
