"""install(): config, idempotence, env variables, and clear refusals."""
from __future__ import annotations

import pytest

from ascend_compat import simulator
from ascend_compat.simulator import _config
from tests.simulator._subproc import check, run_python


def test_install_is_idempotent_and_refuses_conflicts():
    cfg = simulator.config()
    assert simulator.is_installed() and simulator.install() == cfg
    with pytest.raises(RuntimeError, match="already installed"):
        simulator.install(float64="allow")
    with pytest.raises(Exception):
        cfg.devices = 3  # frozen


@pytest.mark.parametrize("kwargs,match", [
    ({"devices": 0}, "devices must be between 1"),
    ({"devices": "2"}, "devices must be an int"),
    ({"float64": "maybe"}, "float64 policy must be one of"),
    ({"memory_capacity": -5}, "memory_capacity must be a positive"),
    ({"memory_capacity": "lots"}, "is not a byte count"),
    ({"soc": "H100"}, "unknown SoC 'H100'"),
    ({"torch_npu_version": "1.8"}, "torch_npu version '1.8'"),
])
def test_invalid_arguments_are_explained(kwargs, match):
    with pytest.raises(_config.SimConfigError, match=match):
        _config.make_config(**kwargs)


def test_env_arguments(monkeypatch):
    for k in ("ASCEND_COMPAT_SIM_DEVICES", "LOCAL_WORLD_SIZE", "ASCEND_COMPAT_SIM_FLOAT64",
              "ASCEND_COMPAT_SIM_MEMORY", "ASCEND_COMPAT_SIM_SOC", "ASCEND_COMPAT_SIM_TORCH_NPU_VERSION",
              "ASCEND_COMPAT_SIM_AUTOGRAD_THREADS"):
        monkeypatch.delenv(k, raising=False)
    assert _config.env_arguments() == {}
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    assert _config.env_arguments() == {"devices": 4}  # torchrun: one NPU per local rank
    monkeypatch.setenv("ASCEND_COMPAT_SIM_DEVICES", "2")
    monkeypatch.setenv("ASCEND_COMPAT_SIM_MEMORY", "2G")
    monkeypatch.setenv("ASCEND_COMPAT_SIM_FLOAT64", "warn")
    monkeypatch.setenv("ASCEND_COMPAT_SIM_AUTOGRAD_THREADS", "device")
    assert _config.env_arguments() == {"devices": 2, "memory_capacity": "2G", "float64": "warn",
                                       "autograd_threads": "device"}
    assert _config.make_config(**_config.env_arguments()).memory_capacity == 2 << 30
    monkeypatch.setenv("ASCEND_COMPAT_SIM_DEVICES", "two")
    with pytest.raises(_config.SimConfigError, match="ASCEND_COMPAT_SIM_DEVICES must be an integer"):
        _config.env_arguments()


def test_simulate_env_installs_at_import():
    out = check(run_python("""
        import ascend_compat, torch
        from ascend_compat import simulator
        cfg = simulator.config()
        print(cfg.float64, cfg.memory_capacity, cfg.soc, cfg.op_table_version)
        print(torch.ones(2, device="npu").device, torch.npu.is_available())
        import torch_npu
        print("torch_npu.npu is torch.npu:", torch_npu.npu is torch.npu)
    """, env={"ASCEND_COMPAT_SIMULATE": "1", "ASCEND_COMPAT_SIM_FLOAT64": "allow",
              "ASCEND_COMPAT_SIM_MEMORY": "64M", "ASCEND_COMPAT_SIM_SOC": "Ascend910B4",
              "ASCEND_COMPAT_SIM_TORCH_NPU_VERSION": "2.5.1"}))
    assert "allow 67108864 Ascend910B4 2.5" in out
    assert "npu:0 True" in out and "torch_npu.npu is torch.npu: True" in out


def test_refuses_when_real_torch_npu_is_importable(tmp_path):
    pkg = tmp_path / "torch_npu"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("__version__ = '2.5.1'\n")
    proc = run_python("""
        import torch
        from ascend_compat import simulator
        try:
            simulator.install()
        except simulator.SimulatorUnavailable as e:
            print("REFUSED|" + str(e))
        print("installed", simulator.is_installed(), hasattr(torch, "npu"))
    """, env={"PYTHONPATH": str(tmp_path), "ASCEND_COMPAT_NO_PATCH": "1"})  # shim off: it imports torch_npu
    out = check(proc)
    assert "REFUSED|real torch_npu is " in out and "installed False False" in out


def test_refuses_when_another_privateuse1_backend_exists():
    out = check(run_python("""
        import torch
        torch.utils.rename_privateuse1_backend("foo")
        from ascend_compat import simulator
        try:
            simulator.install()
        except simulator.SimulatorUnavailable as e:
            print("REFUSED|" + str(e))
    """))
    assert "REFUSED|another PrivateUse1 backend is already registered in this process ('foo'" in out


def test_refuses_when_torch_lacks_the_mechanisms():
    out = check(run_python("""
        import torch
        import torch.utils.backend_registration as br
        del br._setup_privateuseone_for_python_backend  # as on torch < 2.9
        from ascend_compat import simulator
        try:
            simulator.install()
        except simulator.SimulatorUnavailable as e:
            print("REFUSED|" + str(e))
        print("installed", simulator.is_installed())
    """))
    assert "is too old for the simulated NPU" in out and "Install torch >= 2.9" in out
    assert "installed False" in out


def test_refuses_when_a_self_check_fails():
    out = check(run_python("""
        import torch
        from ascend_compat.simulator import _memory
        _memory._DEVICE_OFFSET = 16  # corrupt the retag: the DLPack probe must notice, not crash
        from ascend_compat import simulator
        try:
            simulator.install()
        except simulator.SimulatorUnavailable as e:
            print("REFUSED|" + str(e))
    """))
    assert "REFUSED|" in out and "DLPack" in out


def test_install_leaves_the_memory_statistics_of_every_device_at_zero():
    """The install self-checks allocate on npu:0; the user's statistics start at zero as in a fresh
    torch_npu process (``max_memory_allocated()`` was 1024 before)."""
    out = check(run_python("""
        import torch
        from ascend_compat import simulator
        simulator.install()
        stats = torch.npu.memory_stats()
        print(torch.npu.max_memory_allocated(), torch.npu.memory_allocated(), torch.npu.max_memory_reserved(),
              stats["allocation.all.allocated"], stats["allocated_bytes.all.peak"], stats["requested_bytes.all.peak"])
        x = torch.ones(256, device="npu")
        print(torch.npu.max_memory_allocated())
    """))
    first, second = out.splitlines()
    assert first.split() == ["0"] * 6
    assert int(second) == 1536  # 1 KiB + 32, rounded to 512-byte blocks: only the user's tensor
