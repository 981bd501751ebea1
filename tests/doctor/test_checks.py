"""run_doctor over fixture install trees: healthy, unsourced, broken, outdated, simulated machines."""
from __future__ import annotations

import shutil
import stat

import pytest

from ascend_compat.doctor import checks
from ascend_compat.doctor.checks import exit_code, render_text, run_doctor
from ascend_compat.doctor.environment import Status, probe_import

from doctor_env import by_name, make_env

OK, WARN, FAIL, INFO = Status.OK, Status.WARN, Status.FAIL, Status.INFO
TK83 = "/usr/local/Ascend/ascend-toolkit/latest"
SOURCED_83 = {"ASCEND_HOME_PATH": TK83, "ASCEND_OPP_PATH": f"{TK83}/opp",
              "LD_LIBRARY_PATH": f"{TK83}/lib64:/usr/local/Ascend/driver/lib64"}
SOURCED_85 = {"ASCEND_HOME_PATH": "/usr/local/Ascend/cann", "ASCEND_OPP_PATH": "/usr/local/Ascend/cann/opp",
              "LD_LIBRARY_PATH": "/usr/local/Ascend/cann/lib64"}


def statuses(result):
    return {(c.name, c.status) for c in result}


def test_healthy_910b_machine_pre85_layout():
    result = run_doctor(make_env("toolkit83", SOURCED_83))
    assert exit_code(result) == 0
    assert not [c for c in result if c.status in (FAIL, WARN)], render_text(result)
    for name in ("python", "torch", "torch_npu", "cann", "cann_ops", "driver", "firmware", "devices", "npu_smi",
                 "compatibility", "autoload", "set_env"):
        assert (name, OK) in statuses(result), name
    assert "8 x 910B3" in by_name(result, "npu_smi")[0].detail
    assert "published combination" in by_name(result, "compatibility")[0].detail


def test_310p_machine_85_layout_not_sourced():
    result = run_doctor(make_env("cann85"))
    assert exit_code(result) == 1
    (home,) = by_name(result, "set_env")
    assert home.status is FAIL and "source /usr/local/Ascend/cann/set_env.sh" in home.fix
    assert by_name(result, "opp_path")[0].status is FAIL and "148049" in by_name(result, "opp_path")[0].detail
    assert by_name(result, "cann")[0].detail.startswith("CANN 8.5.0 at /usr/local/Ascend/cann (cann layout")
    assert "2 x 310P3" in by_name(result, "npu_smi")[0].detail
    sourced = run_doctor(make_env("cann85", SOURCED_85))
    assert exit_code(sourced) == 0, render_text(sourced)


def test_broken_machine_reports_every_problem():
    result = run_doctor(make_env("broken", {"ASCEND_HOME_PATH": "/usr/local/Ascend/ascend-toolkit/8.2.RC1"}))
    s = statuses(result)
    assert ("torch", FAIL) in s and "ERR00007" in by_name(result, "torch")[0].detail
    assert "download.pytorch.org/whl/cpu" in by_name(result, "torch")[0].fix
    abi = by_name(result, "torch_npu_abi")[0]
    assert abi.status is FAIL and "torch 2.5.1.*" in abi.detail and "torch-npu==2.6.0" in abi.fix
    cann = by_name(result, "cann")
    assert cann[0].status is FAIL and "dangling symlink (-> 8.2.RC1)" in cann[0].detail
    assert cann[1].status is WARN and "version taken from version.cfg" in cann[1].detail
    assert ("cann_components", WARN) in s and "compiler 8.0.RC3" in by_name(result, "cann_components")[0].detail
    assert ("cann_ops", WARN) in s and "EZ9999" in by_name(result, "cann_ops")[0].detail
    assert ("driver", FAIL) in s and ("devices", FAIL) in s
    stale = by_name(result, "set_env")[0]
    assert stale.status is FAIL and "does not exist (stale" in stale.detail
    assert by_name(result, "compatibility")[0].status is FAIL
    assert exit_code(result) == 1


def test_outdated_cann_unhealthy_card_and_busy_npu():
    result = run_doctor(make_env("old_cann", {"ASCEND_HOME_PATH": TK83, "ASCEND_OPP_PATH": f"{TK83}/opp",
                                              "LD_LIBRARY_PATH": f"{TK83}/lib64"}))
    compat = by_name(result, "compatibility")[0]
    assert compat.status is FAIL and "CANN 8.0.RC2 is older" in compat.detail and "8.3.RC1" in compat.fix
    assert "2.3.1" in compat.fix  # the torch_npu published for 8.0.RC2
    assert by_name(result, "firmware")[0].status is WARN
    smi = by_name(result, "npu_smi")[0]
    assert smi.status is WARN and "NPU 1 Critical" in smi.detail
    assert "pid 412877" in by_name(result, "npu_processes")[0].detail


def test_newer_cann_than_published_is_a_warning(tmp_path):
    root = tmp_path / "m"
    shutil.copytree(make_env("toolkit83").root, root, symlinks=True)
    tk = root / "usr/local/Ascend/ascend-toolkit"
    info = tk / "8.3.RC1/x86_64-linux/ascend_toolkit_install.info"
    info.write_text(info.read_text().replace("version=8.3.RC1", "version=8.5.0"))
    env = make_env("toolkit83", SOURCED_83)
    env.root = root
    compat = by_name(run_doctor(env), "compatibility")[0]
    assert compat.status is WARN and "newer than the pairing" in compat.detail


@pytest.mark.parametrize("value,status,text", [
    ("0,1,2,3", OK, "4 of 8"), ("7", OK, "1 of 8"), ("1,0", FAIL, "not ascending"), ("6,8", FAIL, "[8]"),
    ("0,0", FAIL, "twice"), ("npu0", FAIL, "comma-separated"), (" ", FAIL, "starts with no device id"),
    ("", FAIL, "is empty"), ("0, 1", FAIL, "is read as 0 only"), ("0,,1", FAIL, "is read as 0 only"),
    ("0,1,", OK, "2 of 8"),
])
def test_visible_devices(value, status, text):
    (c,) = by_name(run_doctor(make_env("toolkit83", {**SOURCED_83, "ASCEND_RT_VISIBLE_DEVICES": value})),
                   "visible_devices")
    assert c.status is status and text in c.detail, c


def test_visible_devices_are_read_by_the_parser_the_simulator_uses():
    """Was: doctor read ASCEND_RT_VISIBLE_DEVICES="0, 1" as devices 0 and 1; torch_npu (and the simulator)
    read device 0 only. Both now read the knowledge layer's one parser."""
    from ascend_compat.knowledge import visible_devices
    from ascend_compat.simulator.torch_npu.npu import device

    assert device.visible_device_count is visible_devices.ascend_count
    for value in ("0, 1", "0,1", "0,,1", "3,5x,7", "1,0", "npu0"):
        (c,) = by_name(run_doctor(make_env("toolkit83", {**SOURCED_83, "ASCEND_RT_VISIBLE_DEVICES": value})),
                       "visible_devices")
        sees = visible_devices.ascend_count(value, 8)
        assert (c.status is OK) == (sees == len(value.split(","))), (value, c)


def test_visible_devices_absent_means_no_check():
    assert not [c for c in run_doctor(make_env("toolkit83", SOURCED_83)) if c.name == "visible_devices"]


def test_cuda_visible_devices_without_ascend_equivalent():
    (c,) = by_name(run_doctor(make_env("toolkit83", {**SOURCED_83, "CUDA_VISIBLE_DEVICES": "2,3"})), "cuda_env")
    assert c.status is WARN and "set ASCEND_RT_VISIBLE_DEVICES" in c.fix and "ascend-compat run" in c.fix
    assert "under the shim ASCEND_RT_VISIBLE_DEVICES='2,3'" in c.detail
    (c,) = by_name(run_doctor(make_env("toolkit83", {**SOURCED_83, "CUDA_VISIBLE_DEVICES": "-1"})), "cuda_env")
    assert "under the shim ASCEND_RT_VISIBLE_DEVICES='' (no NPU)" in c.detail
    (c,) = by_name(run_doctor(make_env("toolkit83", {**SOURCED_83, "CUDA_VISIBLE_DEVICES": "2,3",
                                                     "ASCEND_RT_VISIBLE_DEVICES": "2,3"})), "cuda_env")
    assert c.status is INFO and "ASCEND_RT_VISIBLE_DEVICES=2,3 instead" in c.detail


def test_cuda_env_advice_is_the_knowledge_records():
    """doctor states the same facts as check and the shim: the env-var record's reason and advice."""
    from ascend_compat.knowledge import env_vars

    env = {**SOURCED_83, "NCCL_DEBUG": "INFO", "TORCH_CUDA_ARCH_LIST": "8.0", "NCCL_SOCKET_IFNAME": "eth0"}
    got = {c.detail.split("=")[0]: c for c in by_name(run_doctor(make_env("toolkit83", env)), "cuda_env")}
    assert set(got) == {"NCCL_DEBUG", "TORCH_CUDA_ARCH_LIST", "NCCL_SOCKET_IFNAME"}
    for name in ("NCCL_DEBUG", "TORCH_CUDA_ARCH_LIST"):
        rec = env_vars.lookup(name)
        assert rec.reason in got[name].detail and got[name].fix == rec.advice
    assert got["NCCL_SOCKET_IFNAME"].status is WARN and "HCCL_SOCKET_IFNAME" in got["NCCL_SOCKET_IFNAME"].fix


def test_home_path_pointing_at_an_older_install(tmp_path):
    root = tmp_path / "m"
    shutil.copytree(make_env("toolkit83").root, root, symlinks=True)
    old = root / "usr/local/Ascend/ascend-toolkit/8.2.RC1/x86_64-linux"
    old.mkdir(parents=True)
    (old / "ascend_toolkit_install.info").write_text("version=8.2.RC1\narch=x86_64\n")
    h = "/usr/local/Ascend/ascend-toolkit/8.2.RC1"
    env = make_env("toolkit83", {"ASCEND_HOME_PATH": h, "ASCEND_OPP_PATH": f"{TK83}/opp",
                                 "LD_LIBRARY_PATH": f"{h}/lib64"})
    env.root = root
    result = run_doctor(env)
    warn = [c for c in by_name(result, "set_env") if c.status is WARN]
    assert warn and "CANN 8.3.RC1" in warn[0].detail
    assert by_name(result, "cann")[0].detail.startswith("CANN 8.2.RC1")


def test_library_path_problems():
    result = run_doctor(make_env("toolkit83", {**SOURCED_83, "LD_LIBRARY_PATH": f"{TK83}/lib64/stub"}))
    details = [c.detail for c in by_name(result, "ld_library_path")]
    assert any("does not contain" in d for d in details) and any("stub" in d for d in details)


def test_runtime_settings():
    result = run_doctor(make_env("toolkit83", {**SOURCED_83, "ASCEND_LAUNCH_BLOCKING": "1",
                                               "ASCEND_GLOBAL_LOG_LEVEL": "0"}))
    rs = by_name(result, "runtime_settings")
    assert [c.status for c in rs] == [WARN, WARN, INFO]
    assert "expandable_segments" in rs[2].detail
    tuned = run_doctor(make_env("toolkit83", {**SOURCED_83, "TASK_QUEUE_ENABLE": "2",
                                              "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True",
                                              "HCCL_CONNECT_TIMEOUT": "600", "HCCL_EXEC_TIMEOUT": "1800"}))
    assert not [c for c in tuned if c.name == "runtime_settings"]


def test_no_npu_machine_says_what_is_missing():
    result = run_doctor(make_env(None))
    s = statuses(result)
    assert {("torch", FAIL), ("torch_npu", FAIL), ("cann", FAIL), ("driver", FAIL), ("devices", FAIL)} <= s
    assert "newest published pair" in by_name(result, "torch")[0].fix
    assert "hiascend.com" in by_name(result, "cann")[0].fix
    assert "--device=/dev/davinci0" in by_name(result, "devices")[0].fix
    assert "--simulate" in by_name(result, "devices")[0].fix


def test_torch_without_torch_npu_gets_a_matching_suggestion(tmp_path):
    sp = tmp_path / "site-packages"
    shutil.copytree(make_env("toolkit83").root / "site-packages" / "torch-2.7.1.dist-info", sp / "torch-2.7.1.dist-info")
    env = make_env("toolkit83", SOURCED_83, sys_path=[str(sp)])
    result = run_doctor(env)
    c = by_name(result, "torch_npu")[0]
    assert c.status is FAIL and "`pip install torch-npu==2.7.1`" in c.fix and "CANN 8.3.RC1" in c.fix
    assert "torch_npu 2.7.1 + CANN 8.3.RC1" in by_name(result, "compatibility")[0].detail


@pytest.mark.parametrize("how", ["flag", "env"])
def test_simulated_machine_is_reported_as_simulated(how):
    env = make_env(None, {"ASCEND_COMPAT_SIMULATE": "1", "ASCEND_COMPAT_SIM_DEVICES": "4"} if how == "env"
                   else {"ASCEND_COMPAT_SIM_DEVICES": "4"}, simulate=(how == "flag"))
    result = run_doctor(env)
    assert not [c for c in result if c.status is FAIL if c.name != "torch"]
    dev = by_name(result, "devices")[0]
    assert dev.status is INFO and dev.detail.startswith("SIMULATED: 4 'npu' device(s)") and "no real NPU" in dev.detail
    assert by_name(result, "simulator")[0].status is INFO
    env.env = {**env.env, "ASCEND_RT_VISIBLE_DEVICES": "4"}
    assert by_name(run_doctor(env), "visible_devices")[0].status is FAIL


def test_python_outside_torch_range():
    c = by_name(run_doctor(make_env("broken", python_version=(3, 13, 1))), "python")[0]
    assert c.status is WARN and "3.9-3.11" in c.detail


def test_autoload_disabled_and_declared():
    c = by_name(run_doctor(make_env("toolkit83", {**SOURCED_83, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})), "autoload")[0]
    assert c.status is INFO and "will not load torch_npu" in c.detail
    assert by_name(run_doctor(make_env("toolkit83", SOURCED_83)), "autoload")[0].status is OK


def test_import_probe_runs_in_a_real_child_interpreter():
    """The fixture torch_npu packages raise what real torch_npu raises without CANN / next to CUDA torch."""
    failing = by_name(run_doctor(make_env("toolkit83", SOURCED_83, import_probe=probe_import)), "torch_npu_import")[0]
    assert failing.status is FAIL and "libhccl.so" in failing.detail and "set_env.sh" in failing.fix
    ok = by_name(run_doctor(make_env("cann85", SOURCED_85, import_probe=probe_import)), "torch_npu_import")[0]
    assert ok.status is OK and "2.8.0.post2" in ok.detail
    cuda = by_name(run_doctor(make_env("broken", import_probe=probe_import)), "torch_npu_import")[0]
    assert cuda.status is FAIL and "CPU build" in cuda.fix


def _script(path, body):
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_npu_smi_missing_or_failing(tmp_path):
    no_bin = by_name(run_doctor(make_env("cann85", SOURCED_85, with_bin=False)), "npu_smi")[0]
    assert no_bin.status is WARN and "not on PATH" in no_bin.detail
    _script(tmp_path / "npu-smi", "echo 'dcmi module initialize failed. ret is -8005' >&2; exit 255")
    env = make_env("cann85", {**SOURCED_85, "PATH": f"{tmp_path}:/usr/bin:/bin"})
    failing = by_name(run_doctor(env), "npu_smi")[0]
    assert failing.status is WARN and "exit 255" in failing.detail and "-8005" in failing.detail


def test_matrix_missing_or_broken_is_info_not_a_crash():
    def broken():
        raise OSError("version_matrix.json is missing")

    c = by_name(run_doctor(make_env("toolkit83", SOURCED_83, version_matrix=broken)), "compatibility")[0]
    assert c.status is INFO and "version_matrix.json is missing" in c.detail


def test_a_crashing_check_is_contained(monkeypatch):
    def check_explodes(f):
        raise KeyError("boom")

    monkeypatch.setattr(checks, "CHECKS", [checks.check_python, check_explodes])
    result = run_doctor(make_env("toolkit83"))
    assert [c.name for c in result] == ["python", "explodes"]
    assert result[1].status is WARN and "KeyError" in result[1].detail


def test_real_version_matrix_agrees_with_fixture_pairings():
    from ascend_compat.data import version_matrix

    rows = version_matrix()
    env = make_env("toolkit83", SOURCED_83, version_matrix=version_matrix)
    assert by_name(run_doctor(env), "compatibility")[0].status is OK, rows[:3]
    env = make_env("cann85", SOURCED_85, version_matrix=version_matrix)
    assert by_name(run_doctor(env), "compatibility")[0].status is OK


def test_render_text_is_aligned_with_fix_lines():
    result = run_doctor(make_env("old_cann", {"ASCEND_RT_VISIBLE_DEVICES": "1,0"}))
    text = render_text(result).splitlines()
    status_lines = [ln for ln in text if ln.startswith("[")]
    assert len({ln.index(c.detail) for ln, c in zip(status_lines, result)}) == 1  # details start in one column
    assert any(ln.lstrip().startswith("fix: ") for ln in text)
    assert text[-1].endswith("INFO") and "FAIL" in text[-1]


def test_pypi_only_rows_without_cann_pairing():
    rows = [{"torch_npu": "2.13.0", "torch": "2.13.0", "cann": None, "status": "pypi-only"},
            {"torch_npu": "2.12.0", "torch": "2.12.0", "cann": "9.1.0"}]
    tmp_matrix = lambda: [dict(r) for r in rows]  # noqa: E731
    # torch 2.13 without torch_npu: the release exists, pairing unknown, newest published pairing named
    from ascend_compat.doctor import installs

    facts = checks.Facts(make_env(None, version_matrix=tmp_matrix))
    facts.torch = installs.DistInfo("torch", "2.13.0+cpu", None)  # facts are plain cached attributes
    facts.torch_npu = None
    c = checks.check_compatibility(facts)
    assert c.status is INFO and "CANN pairing not published" in c.detail and "CANN 9.1.0" in c.detail
    facts = checks.Facts(make_env("toolkit83", SOURCED_83, version_matrix=tmp_matrix))
    facts.torch_npu = installs.DistInfo("torch_npu", "2.13.0", None)
    c = checks.check_compatibility(facts)
    assert c.status is WARN and "not published" in c.detail and "installed CANN 8.3.RC1" in c.detail


def test_torch_patch_release_without_torch_npu_build(tmp_path):
    """torch 2.7.2 has no torch_npu; torch_npu 2.7.1 pins torch==2.7.1.*: say so instead of a nonexistent pin."""
    sp = tmp_path / "site-packages" / "torch-2.7.2.dist-info"
    sp.mkdir(parents=True)
    (sp / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.7.2\n")
    c = by_name(run_doctor(make_env(None, sys_path=[str(sp.parent)])), "torch_npu")[0]
    assert c.status is FAIL and "no torch_npu release is built for torch 2.7.2" in c.fix
    assert "torch==2.7.1" in c.fix and "torch-npu==2.7.1" in c.fix


def test_in_process_simulator_is_reported_honestly():
    """Process-global: install the simulator in a child interpreter, then run the doctor there."""
    import subprocess
    import sys

    code = ("import ascend_compat.simulator as s; s.install(devices=3)\n"
            "from ascend_compat.doctor.checks import run_doctor\n"
            "from ascend_compat.doctor.environment import Environment\n"
            "for c in run_doctor(Environment(import_probe=None, env={'PATH': '/usr/bin:/bin'})):\n"
            "    print(c.status.value, c.name, '|', c.detail)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    lines = p.stdout.splitlines()
    assert any(ln.startswith("INFO devices | SIMULATED: 3 'npu' device(s)") for ln in lines), p.stdout
    assert any(ln.startswith("INFO torch_npu |") and "stand-in" in ln for ln in lines), p.stdout
    assert not any(ln.startswith("FAIL") for ln in lines), p.stdout


def test_every_fix_is_one_sentence(tmp_path):
    """doctor's fixes have the sentence form of check's suggestions and the records' advice: one full
    stop at the end, no placeholder (over the fixture machines, healthy to broken)."""
    from ascend_compat.knowledge.records import placeholder_problems

    env = {**SOURCED_83, "NCCL_DEBUG": "INFO", "CUDA_VISIBLE_DEVICES": "0", "ASCEND_RT_VISIBLE_DEVICES": "3,1"}
    fixes = [c.fix for name in ("toolkit83", "cann85", "broken", "old_cann", None)
             for c in run_doctor(make_env(name, env if name == "toolkit83" else None)) if c.fix]
    assert len(fixes) >= 10
    bad = {f: placeholder_problems(f) for f in fixes
           if placeholder_problems(f) or not f.endswith(".") or f.endswith("..")}
    assert bad == {}
    assert checks.Check("x", WARN, "d", "do it").fix == "do it."


def test_suggested_torch_npu_agrees_with_the_compatibility_line(tmp_path):
    """Was: `fix: pip install torch-npu==2.13.0` while the compatibility line said that pairing is not published."""
    sp = tmp_path / "site-packages"
    info = sp / "torch-2.13.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0+cpu\n")
    matrix = [{"torch_npu": "2.13.0", "torch": "2.13.0", "cann": None},
              {"torch_npu": "2.12.0", "torch": "2.12.0", "cann": "9.1.0"}]
    result = run_doctor(make_env("toolkit83", SOURCED_83, sys_path=[str(sp)], version_matrix=lambda: matrix))
    assert "torch_npu 2.13.0 + CANN pairing not published" in by_name(result, "compatibility")[0].detail
    fix = by_name(result, "torch_npu")[0].fix
    assert "`pip install torch-npu==2.13.0`" in fix and "publishes no CANN pairing" in fix
    assert "torch 2.12.0 + torch_npu 2.12.0 + CANN 9.1.0" in fix
