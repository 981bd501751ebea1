"""Lightning on the simulated NPU: the "npu" accelerator, accelerator="auto"/"gpu"/"cuda" selection,
mixed precision, and 2-process DDP over the simulated hccl through real torchrun."""
from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from _eco_libs import SCRIPTS, need, results, run

pytestmark = [need("lightning", "lightning"), pytest.mark.xdist_group("eco-lightning")]
SCRIPT = str(SCRIPTS / "pl_train.py")


def _train(*args: str, timeout: float = 120):
    return run(["python", "-m", "ascend_compat", "run", "--simulate", SCRIPT, *args], timeout=timeout)


def _on_npu(r: dict) -> None:
    assert r["accelerator"] == "NPUAccelerator" and r["strategy"] == "SingleDeviceStrategy"
    assert r["root_device"] == "npu:0"
    assert r["seen"]["batch"] == "npu:0" and r["seen"]["param"] == "npu:0"
    assert r["after"] < 0.5 * r["before"]  # it trained


@pytest.fixture(scope="module")
def single():
    """One process trains four Trainers: accelerator npu, auto, gpu (16-mixed), cuda (~15 s)."""
    out = results(_train("npu,auto,gpu@16-mixed,cuda", "1", "--apply", timeout=180))
    return {r["asked"]: r for r in out}


@pytest.mark.parametrize("accelerator", ["npu", "auto", "gpu", "cuda"])
def test_single_device_trains_on_npu(single, accelerator):
    """'gpu'/'cuda' are what a CUDA script says; under ascend-compat they mean the NPU."""
    _on_npu(single[accelerator])


def test_device_summary_names_the_npu():
    """Was: "GPU available: False, used: False" while the Trainer trained on npu:0."""
    proc = _train("gpu", "1")
    text = proc.stdout + proc.stderr
    assert "NPU available: True (Ascend910B3), used: True" in text, text[-3000:]
    assert "GPU available" not in text and "TPU available: False, using: 0 TPU cores" in text
    assert results(proc)[0]["root_device"] == "npu:0"


def test_mixed_precision_autocasts_on_npu(single):
    r = single["gpu"]
    assert r["precision"] == "MixedPrecision" and r["autocast_device"] == "npu"
    assert r["seen"]["out_dtype"] == "torch.float16"  # autocast really ran on the npu tensors


_TRAINERS = (
    "import ascend_compat, lightning as L\n"
    "try:\n"
    "    t = L.Trainer(accelerator='npu', devices=1, logger=False)\n"
    "    print('NPU', type(t.accelerator).__name__, t.strategy.root_device)\n"
    "except Exception as e:\n"
    "    print('NO_NPU', type(e).__name__)\n"
    "t = L.Trainer(accelerator='auto', devices=1, logger=False)\n"
    "print('AUTO', type(t.accelerator).__name__, t.strategy.root_device)\n")


def test_without_the_integration_lightning_does_not_see_the_npu():
    """Negative control: stock Lightning under the shim (CUDA detection truthful) has no NPU."""
    out = run(["python", "-c", _TRAINERS], {"ASCEND_COMPAT_SIMULATE": "1", "ASCEND_COMPAT_DISABLE": "lightning"}).stdout
    assert "NO_NPU" in out and "AUTO CPUAccelerator cpu" in out, out


def test_shim_applies_the_integration_by_itself():
    """No apply() call: activating the shim (import ascend_compat) is enough."""
    out = run(["python", "-c", _TRAINERS], {"ASCEND_COMPAT_SIMULATE": "1"}).stdout
    assert "NPU NPUAccelerator npu:0" in out and "AUTO NPUAccelerator npu:0" in out, out


def test_apply_is_idempotent_and_reverted_by_deactivate():
    code = (
        "import ascend_compat\n"
        "from ascend_compat.ecosystem.integrations import lightning as npl\n"
        "npl.apply(); assert npl.apply() == 0\n"
        "import lightning.pytorch as pl, lightning.fabric as fab\n"
        "from lightning.pytorch.accelerators import AcceleratorRegistry\n"
        "from lightning.fabric.accelerators import ACCELERATOR_REGISTRY\n"
        "assert 'npu' in AcceleratorRegistry and 'npu' in ACCELERATOR_REGISTRY\n"
        "assert AcceleratorRegistry.get('npu').auto_device_count() == 2\n"
        "assert AcceleratorRegistry.get('npu').get_parallel_devices('0,1')[1].type == 'npu'\n"
        "try:\n"
        "    AcceleratorRegistry.get('npu').parse_devices(3)\n"
        "except ValueError as e:\n"
        "    assert '2 NPU(s) are visible' in str(e), e\n"
        "ascend_compat.deactivate()\n"
        "assert 'npu' not in AcceleratorRegistry and 'npu' not in ACCELERATOR_REGISTRY\n"
        "print('OK')\n")
    assert "OK" in run(["python", "-c", code], {"ASCEND_COMPAT_SIMULATE": "1",
                                                 "ASCEND_COMPAT_SIM_DEVICES": "2"}).stdout


def test_fabric_npu_accelerator():
    code = (
        "import torch, ascend_compat\n"
        "from ascend_compat.ecosystem.integrations import lightning as npl; npl.apply()\n"
        "from lightning.fabric import Fabric\n"
        "f = Fabric(accelerator='npu', devices=1); f.launch()\n"
        "model = torch.nn.Linear(4, 1); opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "model, opt = f.setup(model, opt)\n"
        "x = torch.randn(8, 4, device=f.device); loss = model(x).square().mean(); f.backward(loss); opt.step()\n"
        "print('DEVICE', f.device, next(model.parameters()).device)\n")
    out = run(["python", "-c", code], {"ASCEND_COMPAT_SIMULATE": "1"}).stdout
    assert "DEVICE npu:0 npu:0" in out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_ddp_two_processes_torchrun_hccl():
    """torchrun, 2 ranks, accelerator='gpu' (a CUDA script) -> DDP over the simulated hccl (~20 s)."""
    torchrun = Path(sys.executable).with_name("torchrun")
    proc = run([str(torchrun), "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
                "--master_port", str(_free_port()), "-m", "ascend_compat", "run", "--simulate", SCRIPT,
                "gpu", "2", "--apply"], timeout=180)
    ranks = sorted(results(proc), key=lambda r: r["rank"])
    assert [r["rank"] for r in ranks] == [0, 1] and all(r["world"] == 2 for r in ranks)
    assert [r["root_device"] for r in ranks] == ["npu:0", "npu:1"]
    for r in ranks:
        assert r["accelerator"] == "NPUAccelerator" and r["strategy"] == "DDPStrategy"
        assert r["backend"] == "hccl" and r["in_sync"]
        assert r["seen"]["batch"] == r["root_device"]
        assert r["after"] < 0.5 * r["before"]


@need("pytorch_lightning", "lightning")
def test_standalone_pytorch_lightning_package():
    code = (
        "import torch, ascend_compat\n"
        "from ascend_compat.ecosystem.integrations import lightning as npl; npl.apply()\n"
        "import pytorch_lightning as pl\n"
        "class M(pl.LightningModule):\n"
        "    def __init__(s): super().__init__(); s.l = torch.nn.Linear(4, 1)\n"
        "    def training_step(s, b, i): return s.l(b[0]).square().mean()\n"
        "    def configure_optimizers(s): return torch.optim.SGD(s.parameters(), lr=0.1)\n"
        "t = pl.Trainer(accelerator='gpu', devices=1, max_epochs=1, logger=False, enable_checkpointing=False,\n"
        "               enable_progress_bar=False, enable_model_summary=False)\n"
        "data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(16, 4)), batch_size=4)\n"
        "t.fit(M(), data)\n"
        "print('PL', type(t.accelerator).__name__, t.strategy.root_device)\n")
    assert "PL NPUAccelerator npu:0" in run(["python", "-c", code], {"ASCEND_COMPAT_SIMULATE": "1"}).stdout
