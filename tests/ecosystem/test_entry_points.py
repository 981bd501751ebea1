"""The entry-point matrix: every public entry point of the integrated libraries that chooses a device
lands on the NPU under ``ascend-compat run --simulate`` (docs/launchers_and_libraries.md lists it)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from subproc import clean_env

SCRIPT = Path(__file__).resolve().parent / "scripts" / "entry_points.py"

EXPECTED = {
    "lightning.Trainer(accelerator='auto')": "npu:0",
    "lightning.Trainer(accelerator='gpu')": "npu:0",
    "lightning.Trainer(accelerator='cuda')": "npu:0",
    "lightning.Fabric()": "npu:0",
    "lightning.Fabric(accelerator='cuda')": "npu:0",
    "lightning.pytorch.cli.LightningCLI(trainer accelerator auto)": "npu:0",
    "accelerate.Accelerator()": "npu",
    "accelerate.PartialState()": "npu",
    "accelerate.utils.infer_auto_device_map": "['0']",  # device index 0, as on CUDA: the first NPU
    "accelerate.notebook_launcher(num_processes=1)": "npu:0",
    "transformers.TrainingArguments().device": "npu:0",
    "transformers.Trainer(model) places the model": "npu:0",
    "transformers.pipeline(device=0)": "npu:0",
    "transformers.pipeline(device='cuda')": "npu",
    "transformers.from_pretrained(device_map='auto')": "['npu:0']",
    "deepspeed.accelerator.get_accelerator()": "npu npu:0",
    "diffusers.DiffusionPipeline.to('cuda')": "npu:0",
    "diffusers.DiffusionPipeline.enable_model_cpu_offload()": "npu:0",
    "peft.get_peft_model(...).to('cuda')": "['npu:0']",
    "trl.SFTTrainer(...).train() (1 step)": "npu:0",
}


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    out = tmp_path_factory.mktemp("entry_points")
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "run", "--simulate", str(SCRIPT), str(out)],
                          capture_output=True, text=True, timeout=600, env=clean_env(), cwd=str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):]), proc


@pytest.mark.parametrize("entry", sorted(EXPECTED))
def test_entry_point_lands_on_the_npu(matrix, entry):
    results, _ = matrix
    assert results[entry] == EXPECTED[entry]


def test_matrix_is_complete(matrix):
    results, proc = matrix
    assert set(results) == set(EXPECTED)
    assert "never allocated memory on the NPU" not in proc.stderr


def _timm_importable() -> bool:
    import importlib.util

    if importlib.util.find_spec("timm") is None or importlib.util.find_spec("torchvision") is None:
        return False
    probe = subprocess.run([sys.executable, "-c", "import torchvision"], capture_output=True, env=clean_env())
    return probe.returncode == 0


@pytest.mark.skipif(not _timm_importable(),
                    reason="needs timm and a torchvision that imports beside this torch (torch 2.14.1 + "
                           "torchvision 0.29.1 here; none exists for torch 2.13.0)")
def test_timm_prefetcher_and_amp(tmp_path):
    script = SCRIPT.with_name("timm_train.py")
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "run", "--simulate", str(script)],
                          capture_output=True, text=True, timeout=600, env=clean_env(), cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    assert result["param"] == "npu:0"
    assert result["batches"] == [["npu:0", "torch.bfloat16"]] * 2
