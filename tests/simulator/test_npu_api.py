"""The simulated ``torch.npu`` module in the shared test process (default install: 1 x Ascend910B3)."""
from __future__ import annotations

import gc
import warnings

import pytest
import torch

from ascend_compat.simulator._memory import round_size
from ascend_compat.simulator.torch_npu.npu import coverage


@pytest.fixture(autouse=True)
def _installed(sim):
    return sim


def _resolve(root, dotted):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


# ---------------------------------------------------------------------------- coverage of the public surface


def test_every_public_name_of_the_emulated_version_exists_and_is_classified():
    from ascend_compat import data

    names = data.npu_api(None)
    assert len(names) > 100
    for name in sorted(names):
        obj = _resolve(torch.npu, name)  # raises AttributeError if missing
        assert not getattr(obj, "_ascend_compat_late_refusal", False), f"{name} is only a generic refusal"
        top = name.split(".")[0]
        assert coverage.status(top) in ("implemented", "emulated", "refused", "submodule"), name


def test_classification_sets_are_disjoint_and_refused_names_raise_with_reason():
    assert not (coverage.IMPLEMENTED & coverage.EMULATED)
    assert not (coverage.IMPLEMENTED & coverage.REFUSED)
    assert not (coverage.EMULATED & coverage.REFUSED)
    for name in ("stop_device", "restart_device", "npurt", "obfuscation_initialize", "obfuscation_finalize",
                 "obfuscation_calculate", "change_current_allocator", "graph_task_group_begin",
                 "graph_task_group_end", "graph_task_update_begin", "graph_task_update_end"):
        fn = getattr(torch.npu, name)
        args = {"stop_device": (0,), "restart_device": (0,), "graph_task_group_begin": (None,),
                "graph_task_group_end": (None,), "graph_task_update_begin": (None, None),
                "graph_task_update_end": (None,), "change_current_allocator": (None,),
                "obfuscation_finalize": (0,)}.get(name, ())
        with pytest.raises(RuntimeError, match=f"torch.npu.{name} is not supported by the ascend-compat simulated NPU: .+"):
            fn(*args)
    with pytest.raises(RuntimeError, match="NPUPluggableAllocator is not supported"):
        torch.npu.NPUPluggableAllocator("x.so", "alloc", "free")
    with pytest.raises(RuntimeError, match="npugraph_ex.compile_fx is not supported"):
        torch.npu.npugraph_ex.compile_fx(None)


# ---------------------------------------------------------------------------- devices


def test_device_management():
    assert torch.npu.is_available() is True
    assert torch.npu.device_count() == 1
    assert torch.npu.current_device() == 0
    assert torch.npu.is_initialized()
    torch.npu.set_device(0)
    torch.npu.set_device("npu:0")
    torch.npu.set_device(torch.device("npu", 0))
    torch.npu.set_device(-1)  # no-op, as in torch_npu
    with torch.npu.device(0) as ctx:
        assert isinstance(ctx, torch.npu.device)
        assert torch.npu.current_device() == 0
    x = torch.ones(2, device="npu")
    with torch.npu.device_of(x):
        assert torch.npu.current_device() == 0
    with torch.npu.device_of(torch.ones(2)):  # CPU object: no-op
        pass
    torch.npu.synchronize()
    torch.npu.synchronize(0)
    torch.npu.init()


def test_invalid_device_ids_use_torch_npu_errors():
    with pytest.raises(AssertionError, match="Invalid device id"):
        torch.npu.get_device_name(3)
    with pytest.raises(AssertionError, match="Invalid device id"):
        torch.npu.get_device_properties(1)
    with pytest.raises(ValueError, match="Expected a npu device, but got: cpu"):
        torch.npu.get_device_properties("cpu")
    with pytest.raises(RuntimeError, match="Invalid device ID"):
        torch.npu.set_device(5)
    with pytest.raises(RuntimeError, match="Invalid device ID"):
        torch.npu.memory_allocated(3)


def test_device_name_and_properties_of_910b3():
    assert torch.npu.get_device_name() == "Ascend910B3"
    assert torch.npu.get_device_name(0) == "Ascend910B3"
    props = torch.npu.get_device_properties(0)
    assert props.name == "Ascend910B3"
    assert (props.cube_core_num, props.vector_core_num) == (20, 40)
    assert props.total_memory == 62432 * 2**20
    assert props.L2_cache_size == 192 * 2**20
    for field in ("major", "minor", "is_multi_gpu_board", "is_integrated", "multi_processor_count",
                  "max_threads_per_multi_processor", "warp_size", "regs_per_multiprocessor", "gcnArchName"):
        assert getattr(props, field) is None, field  # torch_npu never fills the CUDA-compat fields
    assert len(props.uuid.bytes) == 16 and str(props.uuid).count("-") == 4
    assert repr(props).startswith("_NPUDeviceProperties(name='Ascend910B3', total_memory=62432MB, cube_core_num=20")
    with pytest.raises(AttributeError):
        props.name = "x"


def test_device_capability_defaults_to_none_with_warning(monkeypatch):
    monkeypatch.delenv("TORCH_NPU_DEVICE_CAPABILITY", raising=False)
    with pytest.warns(UserWarning, match="TORCH_NPU_DEVICE_CAPABILITY"):
        assert torch.npu.get_device_capability() is None
    monkeypatch.setenv("TORCH_NPU_DEVICE_CAPABILITY", "8.0")
    with pytest.warns(UserWarning, match="only for compatibility"):
        assert torch.npu.get_device_capability(0) == (8, 0)
    monkeypatch.setenv("TORCH_NPU_DEVICE_CAPABILITY", "8")
    with pytest.warns(UserWarning, match="can't parse TORCH_NPU_DEVICE_CAPABILITY"):
        assert torch.npu.get_device_capability() is None


def test_soc_queries():
    assert torch.npu.get_soc_version() == 223
    assert torch.npu.is_bf16_supported() is True
    assert torch.npu.get_amp_supported_dtype() == [torch.float16, torch.bfloat16, torch.float32]
    assert torch.npu.is_support_inf_nan() is True
    assert torch.npu.get_cann_version().endswith("+simulated")
    assert torch.npu.get_cann_version()[0].isdigit()
    assert torch.npu.get_cann_version("NOPE") == ""
    assert torch.npu.utils.get_cann_version() == torch.npu.get_cann_version()
    assert torch.npu.utilization() == 0
    assert torch.npu.can_device_access_peer(0, 0) is False
    with pytest.warns(UserWarning, match="NPU does not use blas handle"):
        assert torch.npu.current_blas_handle() is None


# ---------------------------------------------------------------------------- streams and events


def test_streams_are_real_torch_streams_and_record_stream_works():
    s = torch.npu.Stream()
    assert isinstance(s, torch.Stream)
    assert s.device == torch.device("npu", 0)
    assert s != torch.npu.default_stream()
    assert torch.npu.Stream(priority=-1).priority == -1
    x = torch.randn(8, device="npu")
    x.record_stream(s)
    assert s.query() is True
    s.synchronize()
    assert torch.npu.current_stream() == torch.npu.default_stream()
    with torch.npu.stream(s):
        assert torch.npu.current_stream() == s
        with torch.npu.stream(None):
            assert torch.npu.current_stream() == s
    assert torch.npu.current_stream() == torch.npu.default_stream()
    with s:
        assert torch.npu.current_stream() == s
    torch.npu.set_stream(s)
    try:
        assert torch.npu.current_stream() == s
    finally:
        torch.npu.set_stream(torch.npu.default_stream())
    assert isinstance(torch.npu.SyncLaunchStream(), torch.npu.Stream)
    plain = torch.Stream(device="npu")  # torch's own class works on the simulated device too
    x.record_stream(plain)
    # a new stream, as torch_npu's device guard hands out a pool stream for torch.Stream(device=...)
    assert plain.device == torch.device("npu:0") and plain.query() is True
    assert plain != torch.npu.default_stream() and plain != torch.Stream(device="npu")
    assert repr(s).startswith("<torch_npu.npu.Stream device=npu:0 npu_stream=0x")


def test_events_measure_wall_clock():
    import time

    start = torch.npu.Event(enable_timing=True)
    end = torch.npu.Event(enable_timing=True)
    assert isinstance(start, torch.Event)
    start.record()
    time.sleep(0.02)
    end.record()
    end.synchronize()
    elapsed = start.elapsed_time(end)
    assert 15.0 <= elapsed < 2000.0
    assert end.query() is True
    assert end.device == torch.device("npu", 0)
    untimed = torch.npu.Event()
    untimed.record()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        untimed.elapsed_time(end)
    with pytest.raises(RuntimeError, match="must be recorded"):
        start.elapsed_time(torch.npu.Event(enable_timing=True))
    s = torch.npu.Stream()
    ev = s.record_event()
    s.wait_event(ev)
    s.wait_stream(torch.npu.default_stream())


def test_external_stream_refuses_sync_like_torch_npu():
    ext = torch.npu.ExternalStream(0x1234)
    assert ext.npu_stream == 0x1234
    for call in (ext.synchronize, ext.query, ext.record_event):
        with pytest.raises(RuntimeError, match="ExternalStream"):
            call()
    ev = torch.npu.ExternalEvent()
    ev.wait()  # allowed before record
    ev.record()
    ev.reset()


def test_stream_and_device_limits():
    s = torch.npu.Stream()
    assert torch.npu.get_stream_limit(s) == {"cube_core_num": 20, "vector_core_num": 40}
    torch.npu.set_stream_limit(s, cube_num=4)
    assert torch.npu.get_stream_limit(s)["cube_core_num"] == 4
    torch.npu.reset_stream_limit(s)
    assert torch.npu.get_stream_limit(s)["cube_core_num"] == 20
    with pytest.raises(AssertionError, match="stream should be torch_npu.npu.Stream"):
        torch.npu.get_stream_limit(object())
    with pytest.raises(TypeError, match="device must be an int"):
        torch.npu.get_device_limit("0")


# ---------------------------------------------------------------------------- memory


@pytest.fixture
def no_gc():
    """Keep garbage from other tests from being freed (and uncounted) in the middle of a measurement."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def test_memory_statistics_are_exact(no_gc):
    torch.npu.empty_cache()
    base = torch.npu.memory_allocated()
    torch.npu.reset_peak_memory_stats()
    x = torch.empty(1024, 1024, device="npu")
    block = round_size(4 * 2**20)  # torch_npu's block rounding of the 4 MiB request
    assert 4 * 2**20 <= block < 4 * 2**20 + 4096
    assert torch.npu.memory_allocated() - base == block
    assert torch.npu.max_memory_allocated() >= base + block
    stats = torch.npu.memory_stats()
    assert stats["allocated_bytes.all.current"] == torch.npu.memory_allocated()
    assert list(stats) == sorted(stats)
    nested = torch.npu.memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["all"]["current"] == stats["allocated_bytes.all.current"]
    free, total = torch.npu.mem_get_info()
    assert total == torch.npu.get_device_properties().total_memory
    assert free == total - torch.npu.memory_reserved()
    del x
    assert torch.npu.memory_allocated() == base
    assert torch.npu.max_memory_allocated() >= base + block
    torch.npu.reset_peak_memory_stats()
    assert torch.npu.max_memory_allocated() == base
    summary = torch.npu.memory_summary()
    assert "PyTorch NPU memory summary, device ID 0" in summary and "Allocated memory" in summary
    with pytest.warns(FutureWarning):
        torch.npu.reset_max_memory_allocated()
    with pytest.warns(FutureWarning):
        torch.npu.memory_cached()


def test_caching_allocator_alloc_and_delete(no_gc):
    base = torch.npu.memory_allocated()
    ptr = torch.npu.caching_allocator_alloc(2 * 2**20)
    assert isinstance(ptr, int) and ptr != 0
    assert torch.npu.memory_allocated() == base + round_size(2 * 2**20)
    assert any(b["requested_size"] == 2 * 2**20 and b["state"] == "active_allocated"
               for seg in torch.npu.memory_snapshot() for b in seg["blocks"])
    torch.npu.caching_allocator_delete(ptr)
    assert torch.npu.memory_allocated() == base
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        torch.npu.caching_allocator_delete(ptr)
    with pytest.raises(TypeError, match="Invalid type for stream argument"):
        torch.npu.caching_allocator_alloc(16, stream="s")


def test_memory_fraction_validation_and_pools():
    assert torch.npu.get_per_process_memory_fraction() == 1.0
    with pytest.raises(TypeError, match="must be `float`"):
        torch.npu.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match="Allowed range: 0~1"):
        torch.npu.set_per_process_memory_fraction(1.5)
    assert torch.npu.get_allocator_backend() == "native"
    pool = torch.npu.MemPool()
    with torch.npu.use_mem_pool(pool):
        y = torch.ones(4, device="npu")
    assert y.sum().item() == 4.0
    assert torch.npu.host_memory_stats()["allocated_bytes.current"] == 0


def test_memory_snapshot_dump_is_written_atomically(tmp_path):
    import pickle

    torch.npu.memory._record_memory_history()
    ptr = torch.npu.caching_allocator_alloc(1024)
    try:
        target = tmp_path / "snap.pickle"
        torch.npu.memory._dump_snapshot(str(target))
        snap = pickle.loads(target.read_bytes())
        assert any(b["requested_size"] == 1024 for seg in snap["segments"] for b in seg["blocks"])
        assert [p.name for p in tmp_path.iterdir()] == ["snap.pickle"]
    finally:
        torch.npu.caching_allocator_delete(ptr)


# ---------------------------------------------------------------------------- RNG


def test_seed_determinism_and_rng_state_round_trip():
    torch.npu.manual_seed(123)
    a = torch.randn(5, device="npu")
    torch.npu.manual_seed_all(123)
    b = torch.randn(5, device="npu")
    assert torch.equal(a.cpu(), b.cpu())
    state = torch.npu.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    c = torch.rand(4, device="npu")
    torch.npu.set_rng_state(state)
    d = torch.rand(4, device="npu")
    assert torch.equal(c.cpu(), d.cpu())
    assert torch.npu.initial_seed() == 123
    states = torch.npu.get_rng_state_all()
    torch.npu.set_rng_state_all(states)
    torch.npu.seed()
    torch.npu.seed_all()
    assert len(torch.npu.default_generators) == torch.npu.device_count()


# ---------------------------------------------------------------------------- AMP


def test_amp_submodule_and_state_functions():
    assert torch.npu.is_autocast_enabled() is False
    lin = torch.nn.Linear(4, 4).npu()
    x = torch.randn(2, 4, device="npu")
    with torch.npu.amp.autocast(dtype=torch.bfloat16):
        assert torch.npu.is_autocast_enabled() is True
        assert lin(x).dtype == torch.bfloat16
    from torch.npu.amp import GradScaler, autocast  # the submodule is importable

    assert isinstance(autocast(), torch.amp.autocast_mode.autocast)
    scaler = GradScaler(init_scale=4.0, dynamic=False)
    assert isinstance(scaler, torch.amp.GradScaler)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    loss = lin(x).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 4.0  # dynamic=False keeps the scale
    with pytest.warns(FutureWarning, match="custom_fwd"):
        torch.npu.amp.custom_fwd(lambda ctx, t: t)
    torch.npu.set_autocast_dtype(torch.float16)
    assert torch.npu.get_autocast_dtype() == torch.float16


# ---------------------------------------------------------------------------- legacy types


def test_legacy_tensor_types_create_npu_tensors():
    t = torch.npu.FloatTensor(2, 3)
    assert t.device.type == "npu" and t.dtype == torch.float32 and t.shape == (2, 3)
    h = torch.npu.HalfTensor([1.0, 2.0])
    assert h.dtype == torch.float16 and h.cpu().tolist() == [1.0, 2.0]
    assert isinstance(torch.ones(2, device="npu"), torch.npu.FloatTensor)
    assert not isinstance(torch.ones(2), torch.npu.FloatTensor)
    assert not isinstance(torch.ones(2, device="npu", dtype=torch.int64), torch.npu.FloatTensor)
    assert torch.npu.LongTensor([1, 2]).dtype == torch.int64
    assert torch.npu.BFloat16Tensor(1).dtype == torch.bfloat16
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        st = torch.npu.FloatStorage(4)
        assert st.device.type == "npu" and st.dtype == torch.float32 and st.size() == 4
        assert isinstance(torch.ones(3, device="npu").storage(), torch.npu.FloatStorage)


# ---------------------------------------------------------------------------- graphs


def test_graph_capture_and_replay_reuses_static_tensors():
    static_in = torch.ones(3, device="npu")
    g = torch.npu.NPUGraph()
    assert torch.npu.is_current_stream_capturing() is False
    with torch.npu.graph(g):
        assert torch.npu.is_current_stream_capturing() is True
        static_out = (static_in * 2 + 1).relu()
    assert g.num_recorded_ops >= 3
    assert static_out.cpu().tolist() == [3.0, 3.0, 3.0]
    static_in.copy_(torch.tensor([1.0, -5.0, 2.0]))
    g.replay()
    assert static_out.cpu().tolist() == [3.0, 0.0, 5.0]
    g.reset()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    assert isinstance(torch.npu.graph_pool_handle(), tuple)
    noise = torch.empty(1000, device="npu")
    g2 = torch.npu.NPUGraph()
    with torch.npu.graph(g2):
        noise.normal_()
    first = noise.cpu().clone()
    g2.replay()
    assert not torch.equal(first, noise.cpu())  # random operators draw anew on each replay
    lin = torch.nn.Linear(2, 2).npu()
    assert torch.npu.make_graphed_callables(lin, (torch.randn(1, 2, device="npu"),)) is lin


def test_whole_training_step_graph_matches_eager_training():
    import copy

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)).npu()
    ref = copy.deepcopy(model)
    opt, ref_opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, ref))
    static_x, static_y = torch.randn(16, 4, device="npu"), torch.randn(16, 1, device="npu")
    g = torch.npu.NPUGraph()
    opt.zero_grad(set_to_none=True)
    with torch.npu.graph(g):  # capture runs the step once, as the eager reference does next
        static_loss = torch.nn.functional.mse_loss(model(static_x), static_y)
        static_loss.backward()
        opt.step()
    torch.nn.functional.mse_loss(ref(static_x), static_y).backward()
    ref_opt.step()
    for _ in range(3):
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        static_x.copy_(x)
        static_y.copy_(y)
        g.replay()
        ref_opt.zero_grad(set_to_none=True)
        ref_loss = torch.nn.functional.mse_loss(ref(x.npu()), y.npu())
        ref_loss.backward()
        ref_opt.step()
        assert static_loss.item() == ref_loss.item()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert torch.equal(p.detach().cpu(), q.detach().cpu())


# ---------------------------------------------------------------------------- configuration


def test_config_switches_are_validated_and_recorded():
    assert torch.npu.matmul.allow_hf32 is False
    assert torch.npu.conv.allow_hf32 is True
    torch.npu.matmul.allow_hf32 = True
    try:
        assert torch.npu.matmul.allow_hf32 is True
    finally:
        torch.npu.matmul.allow_hf32 = False
    with pytest.raises(TypeError, match="allow_hf32 must be a bool"):
        torch.npu.conv.allow_hf32 = 1
    torch.npu.matmul.cube_math_type = torch.npu.CubeMathType.USE_HF32
    assert torch.npu.matmul.cube_math_type == torch.npu.CubeMathType.USE_HF32
    assert torch.npu.is_jit_compile_false() is True
    torch.npu.set_compile_mode(jit_compile=True)
    assert torch.npu.is_jit_compile_false() is False
    torch.npu.set_compile_mode(jit_compile=False)
    torch.npu.set_option({"ACL_PRECISION_MODE": "must_keep_origin_dtype"})
    with pytest.raises(ValueError, match="value of ACL_PRECISION_MODE should be in"):
        torch.npu.set_option({"ACL_PRECISION_MODE": "fast"})
    with pytest.raises(TypeError, match="npu option must be a dict"):
        torch.npu.set_option([])
    with pytest.raises(AssertionError, match="path does not exists"):
        torch.npu.set_dump("/nonexistent/cfg.json")
    with pytest.raises(RuntimeError, match="soc_version >= Ascend910B1"):
        torch.npu.get_npu_overflow_flag()
    assert torch.npu.npu_check_overflow(torch.tensor([1.0, float("inf")], device="npu")) is True
    assert torch.npu.npu_check_overflow(1.0) is False
    with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
        torch.npu.set_sync_debug_mode("loud")
    torch.npu.set_sync_debug_mode("warn")
    assert torch.npu.get_sync_debug_mode() == 1
    torch.npu.set_sync_debug_mode(0)
    with pytest.raises(RuntimeError, match="mode must be 0, 1, or 2"):
        torch.npu.set_task_queue_enable(3)
    assert torch.npu.mstx.range_push("step") == 0
    assert torch.npu.mstx.range_pop() == 0
    with torch.npu.mstx.mstx_range("block"):
        pass


def test_deterministic_with_backward_toggles_around_the_region():
    assert torch.are_deterministic_algorithms_enabled() is False
    x = torch.ones(2, device="npu", requires_grad=True)
    y = torch.npu.enable_deterministic_with_backward(x)
    assert torch.are_deterministic_algorithms_enabled() is True
    z = torch.npu.disable_deterministic_with_backward(y * 2)
    assert torch.are_deterministic_algorithms_enabled() is False
    z.sum().backward()
    assert torch.are_deterministic_algorithms_enabled() is False
    assert x.grad.cpu().tolist() == [2.0, 2.0]


# ---------------------------------------------------------------------------- torch.accelerator


def test_torch_accelerator_reports_npu(no_gc):
    acc = torch.accelerator
    assert acc.current_accelerator() == torch.device("npu")
    assert acc.is_available() is True
    assert acc.device_count() == 1
    assert acc.current_device_index() == 0
    acc.synchronize()
    x = torch.empty(256, 1024, device="npu")
    assert acc.memory_allocated() == torch.npu.memory_allocated() > 0
    assert acc.max_memory_allocated() == torch.npu.max_memory_allocated()
    assert acc.memory_stats()["allocated_bytes.all.current"] == torch.npu.memory_allocated()
    assert acc.memory_reserved() == torch.npu.memory_reserved()
    if hasattr(acc, "get_memory_info"):
        assert acc.get_memory_info() == torch.npu.mem_get_info()
    acc.reset_peak_memory_stats()
    acc.empty_cache()
    del x
    s = torch.npu.Stream()
    acc.set_stream(s)
    try:
        assert acc.current_stream() == s
    finally:
        acc.set_stream(torch.npu.default_stream())
    start, end = torch.Event(enable_timing=True), torch.Event(enable_timing=True)
    assert isinstance(start, torch.Event) and isinstance(start, torch.npu.Event)
    start.record()
    end.record()
    assert start.elapsed_time(end) >= 0.0
    cpu_event = torch.Event("cpu")
    assert not isinstance(cpu_event, torch.npu.Event)


def test_signatures_and_exception_types_follow_torch_npu():
    """torch_npu 2.14: set_op_timeout_ms(timeout), MemPool(allocator, use_on_oom, no_split), and
    mem_get_info of a device that does not exist raises AssertionError("Invalid device id")."""
    torch.npu.set_op_timeout_ms(timeout=100)
    pool = torch.npu.MemPool(use_on_oom=False, no_split=True)
    assert isinstance(pool.id, tuple)
    with pytest.raises(AssertionError, match="Invalid device id"):
        torch.npu.mem_get_info(torch.npu.device_count() + 3)
