"""Every name in the installed torch's ``torch.cuda.__all__`` is mapped, emulated, or an error
naming the API and what to do; the docs table is generated from the same data."""
from __future__ import annotations

import types

import pytest
import torch

from ascend_compat.cuda_shim.mapping import cuda_names as table
from ascend_compat.cuda_shim.patches.cuda_namespace import CudaApiUnsupportedError

pytestmark = pytest.mark.usefixtures("shim")

ALL = sorted(getattr(torch.cuda, "__all__", []))


def _original_torch_cuda():
    import ascend_compat

    ascend_compat.deactivate()
    try:
        return {n: getattr(torch.cuda, n, None) for n in ALL}
    finally:
        ascend_compat.activate("simulator")


@pytest.mark.parametrize("name", ALL)
def test_every_public_name_has_a_working_status(name):
    rec = table.status(name)
    obj = getattr(torch.cuda, name)
    if rec is None:  # a name newer than the records: mapped when torch.npu has it, else explained
        st, npu_name, detail = (table.MAP, name, "") if hasattr(torch.npu, name) else (table.UNSUPPORTED, None, "")
    else:
        st, npu_name, detail = rec.action, rec.npu_name, rec.advice
    if st == table.MAP:
        target = getattr(torch.npu, npu_name, None)
        if target is None:  # the backend lacks it: calling explains that
            with pytest.raises(CudaApiUnsupportedError, match=f"torch.cuda.{name}"):
                obj()
        elif isinstance(target, (type, types.ModuleType)) or not callable(target):
            assert obj is target or getattr(obj, "__ascend_compat_real__", None) is target
        else:
            assert obj.__wrapped__ is target
    elif st == table.UNSUPPORTED:
        with pytest.raises(CudaApiUnsupportedError) as info:
            obj() if not isinstance(obj, types.ModuleType) else obj.anything
        assert f"torch.cuda.{name}" in str(info.value) and detail in str(info.value)
    elif st == table.KEEP:
        assert obj is _original_torch_cuda()[name]
    else:
        assert st == table.EMULATE and obj is not None


def test_device_management_and_capability():
    assert torch.cuda.is_available() and torch.cuda.device_count() >= 1
    major, minor = torch.cuda.get_device_capability()
    assert (major, minor) >= (8, 0)
    props = torch.cuda.get_device_properties(0)
    for field in ("name", "total_memory", "major", "minor", "multi_processor_count"):
        assert getattr(props, field) is not None
    assert props.total_memory > 0 and props.multi_processor_count > 0
    assert torch.cuda.get_device_name(0).startswith("Ascend")
    torch.cuda.set_device("cuda:0")
    assert torch.cuda.current_device() == 0
    with torch.cuda.device(0):
        torch.cuda.synchronize()


def test_capability_is_configurable(monkeypatch):
    monkeypatch.setenv("ASCEND_COMPAT_DEVICE_CAPABILITY", "9.0")
    monkeypatch.delenv("TORCH_NPU_DEVICE_CAPABILITY", raising=False)
    assert torch.cuda.get_device_capability() == (9, 0)
    monkeypatch.setenv("ASCEND_COMPAT_DEVICE_CAPABILITY", "nine")  # a typo warns, never stops the program
    assert torch.cuda.get_device_capability() == (8, 0)


def test_rng_functions():
    torch.cuda.manual_seed(7)
    a = torch.randn(3, device="cuda")
    torch.cuda.manual_seed_all(7)
    b = torch.randn(3, device="cuda")
    assert torch.equal(a, b) and torch.cuda.initial_seed() == 7
    state = torch.cuda.get_rng_state()
    c = torch.randn(3, device="cuda")
    torch.cuda.set_rng_state(state)
    assert torch.equal(c, torch.randn(3, device="cuda"))
    states = torch.cuda.get_rng_state_all()
    torch.cuda.set_rng_state_all(states)
    torch.cuda.seed()
    assert torch.cuda.random.manual_seed is torch.cuda.manual_seed  # submodule rebound too


def test_memory_functions():
    torch.cuda.reset_peak_memory_stats()
    x = torch.empty(1 << 16, device="cuda")
    assert torch.cuda.memory_allocated() >= x.numel() * 4
    assert torch.cuda.max_memory_allocated() >= torch.cuda.memory_allocated()
    free, total = torch.cuda.mem_get_info()
    assert 0 < free <= total
    assert torch.cuda.device_memory_used() == total - free
    torch.cuda.empty_cache()
    assert isinstance(torch.cuda.memory_summary(), str)


def test_streams_and_events():
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = torch.ones(4, device="cuda") * 2
    torch.cuda.current_stream().wait_stream(s)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    y.sum()
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0


def test_legacy_tensor_types():
    t = torch.cuda.FloatTensor(2, 3)
    assert t.shape == (2, 3) and t.device.type == "npu" and t.dtype == torch.float32
    assert isinstance(t, torch.cuda.FloatTensor) and not isinstance(t, torch.cuda.HalfTensor)
    assert not isinstance(torch.ones(1), torch.cuda.FloatTensor)
    assert torch.cuda.LongTensor([1, 2]).tolist() == [1, 2]
    h = torch.ones(2).type("torch.cuda.HalfTensor")
    assert h.device.type == "npu" and h.dtype == torch.float16
    assert torch.ones(2).type(torch.cuda.IntTensor).dtype == torch.int32
    assert torch.ones(2).type() == "torch.FloatTensor"
    with pytest.raises(ValueError, match="torch.cuda.NopeTensor"):
        torch.ones(1).type("torch.cuda.NopeTensor")


def test_nvtx_and_profiler_are_harmless():
    torch.cuda.nvtx.range_push("step")
    torch.cuda.nvtx.mark("here")
    torch.cuda.nvtx.range_pop()
    with torch.cuda.nvtx.range("block {}", 1):
        pass
    torch.cuda.profiler.start()
    torch.cuda.profiler.stop()


def test_graphs_use_npu_graph_when_the_backend_has_it():
    if hasattr(torch.npu, "NPUGraph"):
        assert torch.cuda.CUDAGraph is torch.npu.NPUGraph
    else:
        g = torch.cuda.CUDAGraph()
        with pytest.raises(CudaApiUnsupportedError, match="replay"):
            g.replay()
    f = torch.nn.Linear(2, 2).cuda()
    assert torch.cuda.make_graphed_callables(f, (torch.ones(1, 2, device="cuda"),)) is not None


def test_unsupported_names_explain_what_to_do():
    with pytest.raises(CudaApiUnsupportedError, match="npu-smi"):
        torch.cuda.temperature()
    with pytest.raises(CudaApiUnsupportedError, match="hccl"):
        torch.cuda.nccl.all_reduce
    with pytest.raises(NotImplementedError):  # also catchable as NotImplementedError
        torch.cuda.jiterator._create_jit_fn("x")


def test_docs_table_covers_every_installed_name():
    text = table.docs_table(ALL)
    for name in ALL:
        assert f"| `{name}` |" in text
    assert "| `CUDAGraph` | emulate | partial |" in text
