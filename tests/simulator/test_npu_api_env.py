"""``torch.npu`` behaviour that depends on process-global settings, each in a fresh interpreter."""
from __future__ import annotations

import pytest

from ascend_compat.simulator.torch_npu.npu.device import parse_capability, parse_visible_devices, visible_device_count
from ascend_compat.simulator.torch_npu.npu.soc_specs import SOCS, soc_spec

from _subproc import check, run_python


# ---------------------------------------------------------------------------- pure parsing (no install)


@pytest.mark.parametrize("value, physical, expected", [
    (None, 8, 8),
    ("", 8, 0),
    ("0", 8, 1),
    ("0,1,2,3", 8, 4),
    ("4,5,6,7", 8, 4),
    ("1,0", 8, 0),          # not strictly ascending: nothing visible
    ("0,0", 8, 0),
    ("0,1,9", 8, 2),        # ids from the first one beyond the node are cut
    ("9", 8, 0),
    ("0,1 ,2", 8, 2),       # reading stops at the first char that is neither digit nor comma
    ("0,1;2", 8, 2),
    ("a0,1", 8, 0),
    ("0,,1", 8, 1),         # an empty element ends the list
    ("2,3", 4, 2),
])
def test_visible_device_count_parses_like_torch_npu(value, physical, expected):
    assert visible_device_count(value, physical) == expected


def test_parse_visible_devices_and_capability():
    assert parse_visible_devices(None) is None
    assert parse_visible_devices("3,5x,7") == [3, 5]
    assert parse_capability("8.0") == (8, 0)
    assert parse_capability("10.12") == (10, 12)
    for bad in ("", None, "8", "8.0.1", "v8.0", "8.x"):
        assert parse_capability(bad) is None


def test_soc_table():
    spec = soc_spec(None)
    assert spec.name == "Ascend910B3" and (spec.cube_core_num, spec.vector_core_num) == (20, 40)
    assert soc_spec("Ascend910B1").cube_core_num == 24
    assert not soc_spec("Ascend910A").bf16
    assert all(s.vector_core_num > 0 and s.total_memory > 0 for s in SOCS.values())
    with pytest.raises(ValueError, match="unknown simulated SoC 'Ascend999'; choose one of"):
        soc_spec("Ascend999")


# ---------------------------------------------------------------------------- subprocess cases


def test_ascend_rt_visible_devices_in_a_process():
    out = check(run_python("""
        import ascend_compat.simulator as sim, torch
        sim.install(devices=4)
        print(torch.npu.device_count(), torch.npu.is_available())
    """, env={"ASCEND_RT_VISIBLE_DEVICES": "2,3"}))
    assert out.split() == ["2", "True"]
    out = check(run_python("""
        import ascend_compat.simulator as sim, torch
        sim.install(devices=4)
        print(torch.npu.device_count(), torch.npu.is_available())
    """, env={"ASCEND_RT_VISIBLE_DEVICES": "3,1"}))
    assert out.split() == ["0", "False"]


def test_device_capability_from_environment():
    out = check(run_python("""
        import warnings, ascend_compat.simulator as sim, torch
        sim.install()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            print(torch.npu.get_device_capability())
        print(len(w))
    """, env={"TORCH_NPU_DEVICE_CAPABILITY": "9.0"}))
    assert out.split() == ["(9,", "0)", "1"]


def test_forked_child_after_init_cannot_reinitialise():
    out = check(run_python("""
        import os, ascend_compat.simulator as sim, torch
        sim.install()
        torch.npu.current_device()  # initialises the NPU state, as any device use does
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                torch.npu.current_device()
                code = 3
            except RuntimeError as exc:
                code = 0 if "Cannot re-initialize NPU in forked subprocess" in str(exc) else 4
            code = code or (0 if torch.npu._is_in_bad_fork() else 5)
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), torch.npu.current_device())
    """))
    assert out.split() == ["0", "0"]


def test_forked_child_cannot_allocate_on_npu_after_parent_allocated():
    out = check(run_python("""
        import os, ascend_compat.simulator as sim, torch
        sim.install()
        print(torch.npu.is_initialized())  # install alone does not initialise, as import torch_npu
        x = torch.ones(2, device="npu")  # the first allocation initialises the device
        print(torch.npu.is_initialized())
        pid = os.fork()
        if pid == 0:
            try:
                torch.zeros(3, device="npu")
                code = 3
            except RuntimeError as exc:
                code = 0 if "Cannot re-initialize NPU in forked subprocess" in str(exc) else 4
            if code == 0:
                try:
                    torch.arange(4.0).to("npu")
                    code = 5
                except RuntimeError as exc:
                    code = 0 if "Cannot re-initialize NPU" in str(exc) else 6
            code = code or (0 if torch.arange(3.0).sum().item() == 3.0 else 7)  # CPU still works
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), (x + 1).tolist())
    """))
    assert out.split() == ["False", "True", "0", "[2.0,", "2.0]"]


def test_fork_before_first_use_leaves_the_child_free_to_use_npu():
    out = check(run_python("""
        import os, ascend_compat.simulator as sim, torch
        sim.install()
        pid = os.fork()
        if pid == 0:
            os._exit(0 if torch.ones(2, device="npu").sum().item() == 2 else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """))
    assert out.split() == ["0"]


def test_dataloader_fork_workers_and_pin_memory_thread_after_npu_use():
    out = check(run_python("""
        import ascend_compat.simulator as sim, torch
        from torch.utils.data import DataLoader, TensorDataset
        sim.install()
        w = torch.ones(2, device="npu")
        ds = TensorDataset(torch.arange(16.0).reshape(8, 2))
        loader = DataLoader(ds, batch_size=4, num_workers=2, pin_memory=True,
                            multiprocessing_context="fork")
        total = 0.0
        for (batch,) in loader:
            assert batch.is_pinned()
            total += (batch.to("npu", non_blocking=True) * w).sum().item()
        print(total)

        class OnNpu(torch.utils.data.Dataset):
            def __len__(self):
                return 2
            def __getitem__(self, i):
                return torch.ones(1, device="npu")
        try:
            list(DataLoader(OnNpu(), num_workers=1, multiprocessing_context="fork"))
            print("no-error")
        except RuntimeError as exc:
            print("Cannot re-initialize NPU in forked subprocess" in str(exc))
    """))
    assert out.split() == ["120.0", "True"]


def test_two_devices_properties_and_memory_capacity():
    out = check(run_python("""
        import ascend_compat.simulator as sim, torch
        sim.install(devices=2, memory_capacity="64M", soc="Ascend910B1")
        p = torch.npu.get_device_properties(1)
        print(p.name, p.cube_core_num, p.vector_core_num, p.total_memory)
        print(torch.npu.mem_get_info(1))
        with torch.npu.device(1):
            print(torch.npu.current_device())
            x = torch.empty(1024, 1024, device="npu")
        print(x.device, torch.npu.memory_allocated(1) > 0, torch.npu.memory_allocated(0))
        torch.npu.set_per_process_memory_fraction(0.5, 0)
        print(torch.npu.get_per_process_memory_fraction(0))
        try:
            torch.empty(40 * 1024 * 1024, dtype=torch.uint8, device="npu:0")
            print("no-oom")
        except torch.OutOfMemoryError as exc:
            print("oom")
        torch.npu.manual_seed_all(7)
        a = [torch.rand(2, device=f"npu:{i}").cpu() for i in range(2)]
        torch.npu.manual_seed_all(7)
        b = [torch.rand(2, device=f"npu:{i}").cpu() for i in range(2)]
        print(all(torch.equal(x, y) for x, y in zip(a, b)))
    """))
    lines = out.splitlines()
    assert lines[0] == f"Ascend910B1 24 48 {64 * 2**20}"
    assert lines[1] == f"({64 * 2**20}, {64 * 2**20})"
    assert lines[2] == "1"
    assert lines[3] == "npu:1 True 0"
    assert lines[4] == "0.5"
    assert lines[5] == "oom"
    assert lines[6] == "True"


def test_emulated_older_torch_npu_version_has_its_own_surface():
    out = check(run_python("""
        import ascend_compat.simulator as sim, torch
        sim.install(torch_npu_version="2.5.1")
        print(hasattr(torch.npu, "ExternalStream"), hasattr(torch.npu, "MemPoolContext"))
        with torch.npu.MemPoolContext(torch.npu.MemPool()) as ctx:
            print("pool" if torch.npu.MemPoolContext.active_pool() is ctx.pool else "no-pool")
        import torch_npu
        print(torch_npu.__version__)
    """))
    assert out.split() == ["False", "True", "pool", "2.5.1"]


def test_910a_soc_reports_no_bf16_and_overflow_flags():
    out = check(run_python("""
        import warnings, ascend_compat.simulator as sim, torch
        sim.install(soc="Ascend910A")
        print(torch.npu.is_bf16_supported(), torch.npu.get_amp_supported_dtype() == [torch.float16, torch.float32])
        print(torch.npu.get_npu_overflow_flag(), torch.npu.get_soc_version())
    """))
    assert out.split() == ["False", "True", "False", "102"]


def test_every_name_of_every_known_torch_npu_version_exists_and_is_classified():
    out = check(run_python("""
        import ascend_compat.simulator as sim
        sim.install()
        from ascend_compat import data
        from ascend_compat.simulator.torch_npu.npu import build_npu_module, coverage
        problems, late = [], 0
        for version in data.npu_api_versions():
            module = build_npu_module(version)
            for name in sorted(data.npu_api(version)):
                obj = module
                try:
                    for part in name.split("."):
                        obj = getattr(obj, part)
                except AttributeError:
                    problems.append((version, name, "missing"))
                    continue
                if getattr(obj, "_ascend_compat_late_refusal", False):
                    late += 1
                elif "." not in name:
                    try:
                        coverage.status(name)
                    except KeyError:
                        problems.append((version, name, "unclassified"))
        print(problems)
        print(late)
    """))
    problems, late = out.splitlines()
    assert problems == "[]"
    assert int(late) < 12  # only names of old versions the simulator does not model are generic refusals
