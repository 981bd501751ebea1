"""CUDA training scripts (tests/scripts) run unmodified under ``ascend-compat run --simulate``.

Every script ends with a ``RESULT device=...`` line. The torch here is a CPU build, so any call
that reached CUDA would raise "Torch not compiled with CUDA enabled"; a tensor left on the CPU
next to npu tensors raises the simulator's "Expected all tensors to be on the same device".
"""
from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from shim_helpers import REPO, SCRIPTS, clean_env


def _launch(args, env=None, timeout=600):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=str(REPO),
                          env=clean_env(**(env or {})))


def _result(proc) -> dict:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stdout[-2000:]
    return dict(item.split("=", 1) for item in lines[-1][len("RESULT "):].split())


def _run(script: str, *args: str, env=None) -> dict:
    proc = _launch([sys.executable, "-m", "ascend_compat", "run", "--simulate", str(SCRIPTS / script), *args],
                   env=env)
    assert "Torch not compiled with CUDA" not in proc.stderr
    return _result(proc)


def test_mnist_with_dot_cuda():
    r = _run("mnist_cuda.py", "--epochs", "2")
    assert r["device"] == "npu:0" and r["is_cuda"] == "True"
    assert float(r["acc"]) > 0.9  # it really trained


def test_char_gpt_amp_gradscaler_single_process():
    r = _run("char_gpt_ddp.py")
    assert r["device"] == "npu:0"
    assert r["logits_dtype"] == "torch.bfloat16"  # torch.cuda.amp.autocast took effect on the npu
    assert float(r["last"]) < float(r["first"])


def test_dcgan_with_cudnn_benchmark():
    r = _run("dcgan_cuda.py", "--cuda", "--niter", "2")
    assert r["device"] == "npu:0" and r["benchmark"] == "True"


def test_lstm_language_model_save_and_load():
    r = _run("lstm_lm.py", "--cuda")
    assert r["device"] == "npu:0" and r["loaded"] == "npu:0"


def test_imagenet_style_set_device_and_resume():
    r = _run("imagenet_style.py", "--gpu", "0", "--resume")
    assert r["device"] == "npu:0" and r["wrapper"] == "Sequential"


def test_imagenet_style_dataparallel_two_devices():
    r = _run("imagenet_style.py", "--resume", env={"ASCEND_COMPAT_SIM_DEVICES": "2"})
    assert r["device"] == "npu:0" and r["wrapper"] == "DataParallel"


def test_benchmark_with_cuda_events():
    r = _run("bench_events.py")
    assert r == {"device": "npu:0", "elapsed_ms_positive": "True", "peak_bytes_positive": "True"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("script", ["char_gpt_ddp.py", "imagenet_style.py"])
def test_torchrun_two_processes_backend_nccl_in_source(script):
    proc = _launch([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                    f"--master_port={_free_port()}", "-m", "ascend_compat", "run", "--simulate",
                    str(SCRIPTS / script)])
    r = _result(proc)
    assert r["device"] == "npu:0"
    if script == "char_gpt_ddp.py":
        assert r["world"] == "2" and r["backend"] == "hccl"
    else:
        assert r["wrapper"] == "DistributedDataParallel"


def test_multiprocessing_spawn_ddp_children_are_shimmed():
    r = _run("spawn_ddp.py", env={"ASCEND_COMPAT_SIM_DEVICES": "2"})
    assert r == {"device": "npu:0", "ranks": "2", "replicas_equal": "True", "backend": "hccl"}
