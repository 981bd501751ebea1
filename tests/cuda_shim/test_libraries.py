"""Library detection points see the real CUDA answer; the libraries are never imported by us.

Runs in subprocesses with the real installed libraries (transformers, accelerate, lightning).
"""
from __future__ import annotations

import importlib.util

import pytest

from shim_helpers import run_python


def _need(*names):
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed in this environment")


def test_importing_ascend_compat_does_not_import_libraries():
    proc = run_python("""
        import sys, ascend_compat, torch
        assert torch.cuda.is_available()
        heavy = [m for m in ("transformers", "accelerate", "peft", "trl", "deepspeed", "lightning") if m in sys.modules]
        print("HEAVY", heavy)
    """, ASCEND_COMPAT_SIMULATE="1")
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout


def test_transformers_detection_sees_real_cuda():
    _need("transformers")
    proc = run_python("""
        import ascend_compat, torch
        assert torch.cuda.is_available()
        from transformers.utils import import_utils as iu
        import transformers.utils as tu
        print("RESULT", iu.is_torch_cuda_available(), tu.is_torch_cuda_available(), torch.cuda.is_available())
        print(ascend_compat.report())
    """, ASCEND_COMPAT_SIMULATE="1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "RESULT False False True" in proc.stdout, proc.stdout


def test_accelerate_detection_sees_real_cuda():
    _need("accelerate")
    proc = run_python("""
        import ascend_compat, torch
        from accelerate.utils import imports
        print("RESULT", imports.is_cuda_available(), torch.cuda.is_available())
    """, ASCEND_COMPAT_SIMULATE="1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "RESULT False True" in proc.stdout, proc.stdout


def test_lightning_detection_sees_real_cuda():
    _need("lightning")
    proc = run_python("""
        import ascend_compat, torch
        from lightning.fabric.accelerators.cuda import CUDAAccelerator, num_cuda_devices
        print("RESULT", CUDAAccelerator.is_available(), num_cuda_devices(), torch.cuda.is_available())
    """, ASCEND_COMPAT_SIMULATE="1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "RESULT False 0 True" in proc.stdout, proc.stdout


def test_real_cuda_is_thread_local():
    proc = run_python("""
        import threading, ascend_compat, torch
        from ascend_compat.cuda_shim.patches.cuda_namespace import real_cuda
        seen = []
        inside, done = threading.Event(), threading.Event()
        def library():
            with real_cuda():
                seen.append(("lib", torch.cuda.is_available()))
                inside.set(); done.wait(10)
        t = threading.Thread(target=library); t.start(); inside.wait(10)
        seen.append(("user", torch.cuda.is_available()))
        done.set(); t.join()
        print("RESULT", sorted(seen))
    """, ASCEND_COMPAT_SIMULATE="1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "RESULT [('lib', False), ('user', True)]" in proc.stdout
