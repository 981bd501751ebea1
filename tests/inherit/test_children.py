"""Every Python process a shimmed process starts is shimmed the same way (``ascend_compat._inherit``):
real child processes, started by each launcher, on the simulated NPU."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from subproc import REPO, check, clean_env, run_python

SCRIPTS = Path(__file__).resolve().parent / "scripts"
ECO = REPO / "tests" / "ecosystem" / "scripts"
BIN = Path(sys.executable).parent


def cli(*args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ascend_compat", *args], capture_output=True, text=True,
                          timeout=timeout, env=clean_env(**env), cwd=str(SCRIPTS))


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_subprocess_of_sys_executable_under_run():
    proc = cli("run", "--simulate", "subprocess_parent.py")
    assert "CHILD rank=- device=npu:0 available=True" in check(proc)


def test_subprocess_of_a_process_that_imported_ascend_compat():
    out = check(run_python(f"""
        import ascend_compat, subprocess, sys
        subprocess.run([sys.executable, {str(SCRIPTS / 'child.py')!r}], check=True)
    """, ASCEND_COMPAT_SIMULATE="1"))
    assert "device=npu:0 available=True" in out


def test_settings_given_to_install_and_policies_reach_children():
    out = check(run_python("""
        import subprocess, sys
        import ascend_compat.simulator as sim
        sim.install(devices=2, soc="Ascend910B1")
        import ascend_compat
        ascend_compat.activate()
        from ascend_compat.cuda_shim import dtype_manager, policies
        dtype_manager.apply_dtype_policy("warn")       # after activation: children still get it
        policies.set_channels_last_policy(True)
        code = ("import torch; from ascend_compat.cuda_shim import dtype_manager, policies; "
                "print('KID', torch.cuda.device_count(), torch.npu.get_device_name(), "
                "dtype_manager.current_policy().value, policies.CHANNELS_LAST)")
        subprocess.run([sys.executable, "-c", code], check=True)
    """))
    assert "KID 2 Ascend910B1 warn True" in out


def test_opt_out_and_deactivate_restore_the_environment():
    out = check(run_python(f"""
        import os, subprocess, sys
        before = {{k: os.environ.get(k) for k in ("PYTHONPATH", "ASCEND_COMPAT_INHERIT")}}
        import ascend_compat
        assert os.environ["ASCEND_COMPAT_INHERIT"] == "simulator"
        ascend_compat.deactivate()
        after = {{k: os.environ.get(k) for k in ("PYTHONPATH", "ASCEND_COMPAT_INHERIT")}}
        print("RESTORED", before == after)
        p = subprocess.run([sys.executable, {str(SCRIPTS / 'child.py')!r}], capture_output=True, text=True)
        print("CHILD_AFTER_DEACTIVATE", p.returncode != 0 and "npu" not in p.stdout)
    """, ASCEND_COMPAT_SIMULATE="1", PYTHONPATH="/nonexistent-dir"))
    assert "RESTORED True" in out and "CHILD_AFTER_DEACTIVATE True" in out
    proc = cli("run", "--simulate", "subprocess_parent.py", ASCEND_COMPAT_NO_INHERIT="1")
    assert proc.returncode != 0 and "npu" not in proc.stdout  # the child ran as plain CUDA code


def test_a_child_that_never_imports_torch_imports_nothing_of_ours():
    out = check(run_python("""
        import ascend_compat, subprocess, sys
        code = ("import sys, importlib.util; importlib.util.find_spec('torch'); "  # a probe alone loads nothing
                "print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'ascend_compat')))")
        subprocess.run([sys.executable, "-c", code], check=True)
    """, ASCEND_COMPAT_SIMULATE="1"))
    assert "LOADED []" in out


def test_the_interpreters_own_sitecustomize_still_runs(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("import os\nos.environ['SITE_PID'] = str(os.getpid())\n")
    out = check(run_python("""
        import ascend_compat, subprocess, sys
        code = ("import os, torch; print('SITE', os.environ.get('SITE_PID') == str(os.getpid()), "
                "torch.ones(1).cuda().device)")
        subprocess.run([sys.executable, "-c", code], check=True)
    """, ASCEND_COMPAT_SIMULATE="1", PYTHONPATH=str(tmp_path)))
    assert "SITE True npu:0" in out


def test_torch_multiprocessing_spawn_and_spawn_context_two_ranks():
    out = check(cli("run", "--simulate", "--devices", "2", "mp_spawn.py"))
    for kind in ("TMP", "MP"):
        assert f"{kind} rank=0 device=npu:0" in out and f"{kind} rank=1 device=npu:1" in out


def test_dataloader_workers_under_spawn():
    out = check(cli("run", "--simulate", "loader_spawn.py"))
    assert "WORKERS ['0:npu:True', '1:npu:True']" in out


@pytest.mark.slow
def test_lightning_ddp_own_launcher_two_ranks():
    """Trainer(devices=2, strategy='ddp'): Lightning re-executes the script for rank 1 itself."""
    proc = cli("run", "--simulate", "--devices", "2", str(ECO / "pl_train.py"), "gpu", "2", "--strategy", "ddp")
    ranks = sorted(re.findall(r'"rank": (\d), "world": 2, .*?"root_device": "(npu:\d)"', check(proc)))
    assert ranks == [("0", "npu:0"), ("1", "npu:1")]
    assert check(proc).count('"backend": "hccl", "in_sync": true') == 2


@pytest.mark.slow
def test_accelerate_launch_under_run():
    proc = cli("run", "--simulate", "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
               "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
               "--main_process_port", str(_port()), str(ECO / "accel_train.py"))
    out = check(proc)
    assert '"rank": 0, "world": 2, "device": "npu:0", "distributed_type": "DistributedType.MULTI_NPU"' in out
    assert '"rank": 1, "world": 2, "device": "npu:1", "distributed_type": "DistributedType.MULTI_NPU"' in out


@pytest.mark.slow
def test_deepspeed_launcher_under_run():
    proc = cli("run", "--simulate", "--devices", "2", str(BIN / "deepspeed"), "--num_gpus", "2",
               "--master_port", str(_port()), str(ECO / "ds_train.py"), timeout=400)
    out = check(proc)
    for rank in (0, 1):
        assert f'"rank": {rank}, "world": 2, "accelerator": "npu", "comm": "hccl"' in out
        assert f'"device": "npu:{rank}"' in out


def test_devices_needs_simulate():
    proc = cli("run", "--devices", "2", "child.py")
    assert proc.returncode == 2 and "--simulate" in proc.stderr


def test_cpu_run_is_reported_at_exit(tmp_path):
    script = tmp_path / "cpu.py"
    script.write_text("import torch\nuse_gpu = torch.cuda.is_available()\n"
                      "m = torch.nn.Linear(4, 4)\nm(torch.randn(2, 4)).sum().backward()\n")
    proc = cli("run", "--simulate", str(script))
    assert proc.returncode == 0
    assert proc.stderr.count("never allocated memory on the NPU: it ran on the CPU") == 1
    assert f"the first, torch.cuda.is_available, at {script}:2" in proc.stderr
    quiet = cli("run", "--simulate", "child.py")
    assert "never allocated" not in quiet.stderr


#: the ways libraries look for torch before (or instead of) importing it; none may use up the child's hook
_PROBES = {
    "find_spec": "import importlib.util; assert importlib.util.find_spec('torch') is not None",
    "find_spec_twice": "import importlib.util; importlib.util.find_spec('torch'); importlib.util.find_spec('torch')",
    "find_spec_submodule": "import importlib.util; importlib.util.find_spec('torch.nn')",
    "pkgutil_find_loader": "import pkgutil, warnings; warnings.simplefilter('ignore'); pkgutil.find_loader('torch')",
    "pkgutil_iter_modules": "import pkgutil; assert any(m.name == 'torch' for m in pkgutil.iter_modules())",
    "metadata_version": "import importlib.metadata as md; md.version('torch'); md.distribution('torch').files",
    "metadata_distributions": "import importlib.metadata as md; assert any(d.metadata['Name'] == 'torch' "
                              "for d in md.distributions())",
    "packages_distributions": "import importlib.metadata as md; assert 'torch' in md.packages_distributions()",
    "import_submodule": "import torch.nn.functional",
    "import_module": "import importlib; importlib.import_module('torch')",
    "dunder_import": "__import__('torch')",
}


@pytest.mark.parametrize("probe", sorted(_PROBES))
def test_looking_torch_up_does_not_use_up_the_childs_hook(probe):
    """transformers, datasets, peft and accelerate call find_spec / metadata lookups before ``import torch``:
    the child is shimmed all the same (issue 23 item 11)."""
    code = (f"{_PROBES[probe]}\nimport torch\n"
            "print('PROBED', torch.cuda.is_available(), torch.ones(1).cuda().device)")
    out = check(run_python(f"""
        import ascend_compat, subprocess, sys
        subprocess.run([sys.executable, "-c", {code!r}], check=True)
    """, ASCEND_COMPAT_SIMULATE="1"))
    assert "PROBED True npu:0" in out


@pytest.mark.parametrize("value", ["2", "0", "x", "100", " 3 "])
def test_parent_and_child_read_local_world_size_alike(monkeypatch, value):
    """LOCAL_WORLD_SIZE has one reader (simulator._config.implied_devices), so a parent never exports a
    device count its children would arrive at themselves, nor omits one they would not (was: two parsers,
    which disagreed on "100")."""
    from ascend_compat.simulator import _config

    monkeypatch.setenv("LOCAL_WORLD_SIZE", value)
    monkeypatch.delenv("ASCEND_COMPAT_SIM_DEVICES", raising=False)
    child = _config.env_arguments(strict=False).get("devices", _config.SimConfig().devices)
    assert _config.implied_devices() == child


def test_a_launcher_whose_rank_used_the_npu_gets_no_cpu_notice():
    """Was: launchers that only count devices ended with "it ran on the CPU" although their ranks trained
    on the NPU (a DeepSpeed communication benchmark printed two such lines)."""
    proc = cli("run", "--simulate", "launcher.py")
    out = check(proc)
    assert "LAUNCHER sees 1 device(s)" in out and "CHILD rank=- device=npu:0" in out
    assert "never allocated memory on the NPU" not in proc.stderr, proc.stderr
    proc = cli("run", "--simulate", "launcher.py", "cpu")  # a rank on the CPU still says so, once, itself
    assert check(proc).count("CPU RANK done") == 1
    assert proc.stderr.count("never allocated memory on the NPU") == 2, proc.stderr  # the rank and its launcher
    assert "cpu_rank.py:4" in proc.stderr
