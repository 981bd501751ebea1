"""accelerate on the simulated NPU under the shim: device/backend choice, real 2-process launch."""
from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path

import pytest

from _eco_libs import SCRIPTS, need, results, run

pytestmark = need("accelerate", "accelerate")
SIM = {"ASCEND_COMPAT_SIMULATE": "1"}


def test_single_process_accelerator_picks_npu_under_shim():
    r = results(run(["python", "-m", "ascend_compat", "run", "--simulate", str(SCRIPTS / "accel_train.py")]))[0]
    assert r["cuda_available"] is True  # the script believes it runs on CUDA...
    assert r["device"].startswith("npu") and r["param_device"] == "npu:0"  # ...and runs on the NPU
    assert r["distributed_type"] == "DistributedType.NO"
    assert r["losses"][-1] < r["losses"][0]


def _free_port() -> int:
    # not 0: torchrun passes MASTER_PORT=0 to the workers, which then hang (torch 2.13, plain gloo too)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_accelerate_launch_two_processes_multi_npu_hccl(tmp_path):
    """Real ``accelerate launch`` (torch elastic underneath), 2 ranks on 2 simulated NPUs (~25 s)."""
    launcher = str(Path(sys.executable).with_name("accelerate"))
    if not Path(launcher).exists():
        launcher = shutil.which("accelerate") or pytest.skip("the accelerate console script is not on PATH")
    proc = run([launcher, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(_free_port()),
                "-m", "ascend_compat", "run", "--simulate", str(SCRIPTS / "accel_train.py")],
               timeout=240, cwd=str(tmp_path))
    ranks = sorted(results(proc), key=lambda r: r["rank"])
    assert [r["rank"] for r in ranks] == [0, 1] and all(r["world"] == 2 for r in ranks)
    assert [r["device"] for r in ranks] == ["npu:0", "npu:1"]
    for r in ranks:
        assert r["distributed_type"] == "DistributedType.MULTI_NPU"
        assert r["backend"] == "hccl" and r["dist_backend"] == "hccl"
        assert r["weights_in_sync"]  # DDP over the simulated hccl kept replicas identical
        assert r["losses"][-1] < r["losses"][0]
    assert ranks[0]["losses"] == ranks[1]["losses"]  # gathered losses agree across ranks


def test_max_memory_device_name_keys():
    code = (
        "import torch, ascend_compat\n"
        "from ascend_compat.ecosystem.integrations import accelerate_patch\n"
        "accelerate_patch.apply()\n"
        "from accelerate.utils import get_max_memory\n"
        "m = get_max_memory({'npu:0': '1MB', 'cuda:1': 2000, torch.device('npu', 2): 5, 'cpu': '1GB'})\n"
        "assert m == {0: 10**6, 1: 2000, 2: 5, 'cpu': 10**9}, m\n"
        "try:\n"
        "    get_max_memory({'npu:0': 1, 0: 2})\n"
        "except ValueError as e:\n"
        "    assert 'twice' in str(e)\n"
        "else:\n"
        "    raise SystemExit('duplicate device keys accepted')\n"
        "ascend_compat.deactivate()\n"
        "from accelerate.utils import get_max_memory as g\n"
        "try:\n"
        "    g({'npu:0': 1})\n"
        "except ValueError:\n"
        "    print('OK')\n")
    assert "OK" in run(["python", "-c", code], {**SIM, "ASCEND_COMPAT_SIM_DEVICES": "3"}).stdout
