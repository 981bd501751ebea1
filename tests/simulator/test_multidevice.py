"""Several simulated devices in one process: the optional C++ guard (simulator/_cext).

Each test runs in a fresh interpreter (the install is process-global). The guard library is
built once per torch build into the user's torch extension cache; the module fixture does
that first (bounded) so the tests themselves stay fast, and skips them, saying why, when no
C++ toolchain is available (the no-compiler behaviour has its own test).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _subproc import check, clean_env, run_python

BUILD_TIMEOUT = 600  # first build of the guard: ~10-30 s on 2 cores, generous for loaded CI
RUN_TIMEOUT = 120


@pytest.fixture(scope="module")
def guard_built():
    """Build (or find cached) the C++ guard in a subprocess; skip with the reason if impossible."""
    proc = subprocess.run(
        [sys.executable, "-c",
         "import json, time\n"
         "from ascend_compat.simulator import _cext\n"
         "t = time.perf_counter(); reason = _cext.ensure_built()\n"
         "print(json.dumps({'reason': reason, 'seconds': time.perf_counter() - t,\n"
         "                  'info': _cext.guard_info()}))\n"],
        env=clean_env(), capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if result["reason"]:
        pytest.skip(f"multi-device guard unavailable here: {result['reason']}")
    return result


def run2(code: str, env=None) -> str:
    """Run ``code`` after install(devices=2) in a fresh interpreter; return its stdout."""
    prelude = "import ascend_compat.simulator as sim\nsim.install(devices=2)\nimport torch\n"
    return check(run_python(prelude + code, env=env, timeout=RUN_TIMEOUT))


def test_backward_on_npu1_matches_cpu(guard_built):
    out = run2("""
from ascend_compat.simulator import _guard
assert _guard.cxx_guard_active() and torch.npu.device_count() == 2
torch.manual_seed(0)
ref = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))
model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))
model.load_state_dict(ref.state_dict())
model.to("npu:1")
opt, ref_opt = (torch.optim.AdamW(m.parameters(), lr=0.01) for m in (model, ref))
for step in range(3):
    x, y = torch.randn(8, 6), torch.randn(8, 2)
    for m, o, dev in ((model, opt, "npu:1"), (ref, ref_opt, "cpu")):
        o.zero_grad()
        torch.nn.functional.mse_loss(m(x.to(dev)), y.to(dev)).backward()
        o.step()
grad_devices = sorted({str(p.grad.device) for p in model.parameters()})
param_devices = sorted({str(p.device) for p in model.parameters()})
same = all(torch.equal(p.cpu(), q) for p, q in zip(model.parameters(), ref.parameters()))
print(grad_devices, param_devices, same)
""")
    assert out.split("\n")[-2] == "['npu:1'] ['npu:1'] True"


def test_tensors_move_between_devices_with_autograd(guard_built):
    out = run2("""
a = torch.arange(6.0, device="npu:0").reshape(2, 3).requires_grad_()
b = (a * 2).to("npu:1")
c = b.t().contiguous().to("npu:0")
(b.sum() * 3 + c.sum().to("npu:1")).backward()
dst = torch.empty(2, 3, device="npu:1")
dst.copy_(a.detach())
print(b.device, c.device, a.grad.device, a.grad.tolist(), dst.device, torch.equal(dst.cpu(), a.detach().cpu()))
""")
    assert out.strip().splitlines()[-1] == (
        "npu:1 npu:0 npu:0 [[8.0, 8.0, 8.0], [8.0, 8.0, 8.0]] npu:1 True")


def test_mixed_devices_npu0_npu1_raise(guard_built):
    out = run2("""
try:
    torch.ones(2, device="npu:0") + torch.ones(2, device="npu:1")
except RuntimeError as exc:
    print(exc)
""")
    assert re.search(
        r"Expected all tensors to be on the same device, but found at least two devices, "
        r"npu:[01] and npu:[01]!", out)


def test_current_device_is_shared_by_python_and_cxx(guard_built):
    out = run2("""
from ascend_compat.simulator import _cext
torch.npu.set_device(1)
seen = [torch.npu.current_device(), _cext._guard.current_device(), str(torch.empty(1, device="npu").device)]
with torch.npu.device(0):
    seen += [torch.npu.current_device(), _cext._guard.current_device()]
seen.append(torch.npu.current_device())
e1, e2 = torch.Event(device="npu:1", enable_timing=True), torch.Event(device="npu:1", enable_timing=True)
e1.record(); e2.record()
seen.append(e1.elapsed_time(e2) >= 0)
print(seen)
""")
    assert out.strip().splitlines()[-1] == "[1, 1, 'npu:1', 0, 0, 1, True]"


def test_exactly_one_guard_is_registered(guard_built):
    out = run2("""
from ascend_compat.simulator import _cext, _guard
python_guard_taken = torch._C._acc.register_python_privateuseone_device_guard(_guard.PythonDeviceGuard())
print(_cext._guard.is_active(), python_guard_taken, _cext.load_guard(3), _cext.unavailable_reason())
""")
    last = out.strip().splitlines()[-1]
    assert last.startswith("True False None "), last
    assert "cannot change it to 3" in last


def test_install_from_env_offers_local_world_size_devices(guard_built):
    out = check(run_python(
        "import ascend_compat.simulator as sim\nsim.install_from_env()\nimport torch\n"
        "print(torch.npu.device_count())\n",
        env={"LOCAL_WORLD_SIZE": "3"}, timeout=RUN_TIMEOUT))
    assert out.strip().splitlines()[-1] == "3"


def test_cached_guard_loads_and_clears_stale_build_lock(guard_built, tmp_path):
    built = Path(guard_built["info"]["path"]).parent
    copy = tmp_path / built.name
    shutil.copytree(built, copy)
    (copy / "lock").write_text("")  # what a killed torch build leaves behind
    out = run2("""
from ascend_compat.simulator import _cext
print(_cext.guard_info()["built_seconds"], _cext.guard_info()["path"])
""", env={"TORCH_EXTENSIONS_DIR": str(tmp_path), "CXX": "no-such-compiler"})
    seconds, path = out.strip().splitlines()[-1].split(" ", 1)
    assert seconds == "None"  # loaded from cache: no compiler needed
    assert Path(path).parent == copy
    assert not (copy / "lock").exists()


def test_cache_is_keyed_by_torch_build():
    import torch

    from ascend_compat.simulator import _cext

    name = _cext.extension_name()
    assert name.startswith("ascend_compat_sim_guard_" + re.sub(r"[^0-9A-Za-z]+", "_", torch.__version__))
    assert name.isidentifier()
    assert _cext.build_directory().name == name


def test_without_compiler_one_device_and_a_clear_reason(tmp_path):
    proc = run_python("""
import ascend_compat.simulator as sim
sim.install(devices=2)
import torch
print(torch.npu.device_count())
try:
    torch.npu.set_device(1)
except RuntimeError as exc:
    print("refused:", str(exc).splitlines()[0])
""", env={"TORCH_EXTENSIONS_DIR": str(tmp_path), "CXX": "no-such-compiler"}, timeout=RUN_TIMEOUT)
    out = check(proc)
    lines = out.strip().splitlines()
    assert lines[0] == "1"
    assert lines[1].startswith("refused: Invalid device ID.") and "npu:1" in lines[1]
    assert "SimulatedDeviceCountWarning: simulated NPU: cannot offer 2 devices, only 1" in proc.stderr
    assert "no C++ compiler was found (looked for 'no-such-compiler'" in proc.stderr
    assert "pip install ninja" in proc.stderr and proc.stderr.count("cannot offer 2 devices") == 1
    assert not list(tmp_path.rglob("*.so"))


def test_failed_build_offers_one_device_and_says_why(tmp_path):
    proc = run_python("""
import ascend_compat.simulator as sim
sim.install(devices=2)
import torch
print(torch.npu.device_count())
""", env={"TORCH_EXTENSIONS_DIR": str(tmp_path), "CXX": "false"}, timeout=RUN_TIMEOUT)
    assert check(proc).strip().splitlines()[-1] == "1"
    assert "cannot offer 2 devices, only 1: building the multi-device guard failed" in proc.stderr
    assert "ASCEND_COMPAT_LOG_LEVEL=DEBUG" in proc.stderr


def test_visible_devices_bound_every_device_index(guard_built):
    # a 4-NPU node restricted to two: npu:0/npu:1 are the visible ones, npu:2 does not exist for
    # tensor creation, set_device, generators or torch.accelerator
    out = check(run_python("""
        import ascend_compat.simulator as sim
        sim.install(devices=4)
        import torch
        print(torch.npu.device_count(), torch.accelerator.device_count())
        print(torch.zeros(1, device="npu:1").device)
        for make in (lambda: torch.zeros(1, device="npu:2"), lambda: torch.ones(2).to("npu:3"),
                     lambda: torch.npu.set_device(2), lambda: torch.Generator("npu:2")):
            try:
                make()
                print("accepted")
            except RuntimeError as exc:
                print(str(exc).startswith("Invalid device ID."), "ASCEND_RT_VISIBLE_DEVICES" in str(exc))
    """, env={"ASCEND_RT_VISIBLE_DEVICES": "0,1"}, timeout=RUN_TIMEOUT))
    lines = out.strip().splitlines()
    assert lines[:2] == ["2 2", "npu:1"]
    assert lines[2:] == ["True True"] * 4, out
