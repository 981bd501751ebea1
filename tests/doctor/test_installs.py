"""Reading installs from files and command output: versions, CANN layouts, driver, devices, npu-smi."""
from __future__ import annotations

from pathlib import Path

import pytest

from ascend_compat.doctor import installs
from ascend_compat.doctor.versions import base_version

from doctor_env import FIXTURES, make_env

SMI = FIXTURES / "npu_smi"


def test_base_version():
    assert base_version("2.5.1.post1") == "2.5.1" and base_version("2.6.0+cu124") == "2.6.0"
    assert base_version("weird-build") == "weird-build"  # found on a machine: reported, not a crash


def test_parse_910b_table():
    info = installs.parse_npu_smi((SMI / "910b3_x8.txt").read_text())
    assert info.version == "24.1.rc2"
    assert [d.npu for d in info.devices] == list(range(8))
    d0 = info.devices[0]
    assert (d0.name, d0.health, d0.bus_id, d0.memory_used_mb, d0.memory_total_mb) == \
        ("910B3", "OK", "0000:C1:00.0", 3398, 65536)
    assert info.processes == []


def test_parse_310p_table_with_device_column():
    info = installs.parse_npu_smi((SMI / "310p3_x2.txt").read_text())
    assert [(d.npu, d.name, d.memory_total_mb) for d in info.devices] == [(0, "310P3", 21527), (1, "310P3", 21527)]


def test_parse_processes_and_health():
    info = installs.parse_npu_smi((SMI / "910b_busy_unhealthy.txt").read_text())
    assert [d.health for d in info.devices] == ["OK", "Critical"]
    assert info.devices[0].memory_used_mb == 61234
    assert info.processes == [(0, 412877, "python3", 57893)]


def test_parse_garbage_is_empty():
    info = installs.parse_npu_smi("dcmi module initialize failed. ret is -8005\n")
    assert info.devices == [] and info.version is None


def test_version_cfg():
    cfg = installs.read_version_cfg(FIXTURES / "broken/usr/local/Ascend/ascend-toolkit/8.0.0/version.cfg")
    assert cfg["runtime"] == "8.0.0" and cfg["compiler"] == "8.0.RC3"


def test_cann_pre85_layout_through_latest_symlink():
    found = installs.find_cann(make_env("toolkit83"))
    assert len(found) == 1  # latest and 8.3.RC1 are the same install
    c = found[0]
    assert (c.version, c.layout, c.arch, c.ops_version) == ("8.3.RC1", "ascend-toolkit", "x86_64", "8.3.RC1")
    assert c.home == Path("/usr/local/Ascend/ascend-toolkit/latest")
    assert c.info_file == Path("/usr/local/Ascend/ascend-toolkit/8.3.RC1/x86_64-linux/ascend_toolkit_install.info")
    assert c.set_env == Path("/usr/local/Ascend/ascend-toolkit/set_env.sh")


def test_cann_85_layout():
    (c,) = installs.find_cann(make_env("cann85"))
    assert (c.version, c.layout, c.arch, c.ops_version) == ("8.5.0", "cann", "aarch64", "8.5.0")
    assert c.set_env == Path("/usr/local/Ascend/cann/set_env.sh")


def test_ascend_home_path_is_looked_at_first():
    env = make_env("toolkit83", {"ASCEND_HOME_PATH": "/usr/local/Ascend/ascend-toolkit/8.3.RC1"})
    (c,) = installs.find_cann(env)
    assert c.source == "$ASCEND_HOME_PATH"


def test_user_install_under_home(tmp_path):
    home = tmp_path / "home" / "dev"
    d = home / "Ascend" / "ascend-toolkit" / "8.1.RC1" / "aarch64-linux"
    d.mkdir(parents=True)
    (d / "ascend_toolkit_install.info").write_text("version=8.1.RC1\narch=aarch64\n")
    env = make_env(None, {"HOME": "/home/dev"})
    env.root = tmp_path
    (c,) = installs.find_cann(env)
    assert c.version == "8.1.RC1" and c.home == Path("/home/dev/Ascend/ascend-toolkit/8.1.RC1")


def test_dangling_latest():
    assert installs.broken_latest_link(make_env("broken")) == "8.2.RC1"
    assert installs.broken_latest_link(make_env("toolkit83")) is None


def test_driver_firmware_devices():
    env = make_env("toolkit83")
    d = installs.read_driver(env)
    assert d.version == "24.1.rc2" and d.compatible_fw == ("7.0.0", "7.5.99")
    assert installs.read_firmware(env)[1] == "7.5.0.1.129"
    assert installs.device_nodes(env) == (list(range(8)), ["davinci_manager", "devmm_svm", "hisi_hdc"])
    assert installs.read_driver(make_env("broken")) is None


def test_distributions_and_cuda_build():
    env = make_env("broken")
    torch = installs.find_distribution(env, "torch")
    assert torch.version == "2.6.0+cu124" and torch.cuda == "12.4"
    npu = installs.find_distribution(env, "torch-npu")  # name normalisation
    assert npu.version == "2.5.1" and installs.torch_pin(npu) == "2.5.1"
    assert ("torch.backends", "torch_npu", "torch_npu:_autoload") in npu.entry_points
    assert installs.find_distribution(make_env("toolkit83"), "torch").cuda is None
    assert installs.find_distribution(make_env(None), "torch") is None
