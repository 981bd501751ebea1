"""Storages, the profiler, ``torch.compile`` and ``torch.utils.cpp_extension`` under the shim
(transfer_to_npu entry points beyond device arguments), each undone by ``deactivate()``."""
from __future__ import annotations

import json
import warnings

import pytest
import torch

from shim_helpers import run_python


def _patched(target: str):
    from ascend_compat.cuda_shim import registry

    return [c for c in registry.applied() if getattr(c, "target", None) == target]


# --------------------------------------------------------------------------- storage

def test_storage_cuda_moves_to_npu(shim):
    s = torch.arange(4.0).untyped_storage().cuda()
    assert s.device == torch.device("npu:0") and s.is_cuda
    assert torch.ones(2).untyped_storage().cuda(0).device == torch.device("npu:0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # TypedStorage deprecation
        typed = torch.arange(3.0).storage().cuda()
        assert typed.device == torch.device("npu:0") and typed.is_cuda
        assert typed.tolist() == [0.0, 1.0, 2.0]
        assert not torch.ones(2).storage().is_cuda
    assert torch.ones(2, device="cuda").untyped_storage().is_cuda
    assert not torch.ones(2).untyped_storage().is_cuda
    assert shim.cuda_shim.registry.counters().get("Storage.cuda", 0) >= 3


def test_storage_patches_restored_by_identity():
    import ascend_compat
    from torch.storage import TypedStorage, UntypedStorage, _StorageBase

    before = (_StorageBase.__dict__["cuda"], TypedStorage.__dict__["cuda"],
              UntypedStorage.__dict__["is_cuda"], TypedStorage.__dict__["is_cuda"])
    ascend_compat.deactivate()
    ascend_compat.activate("simulator")
    try:
        assert _StorageBase.__dict__["cuda"] is not before[0]
        assert UntypedStorage.__dict__["is_cuda"] is not before[2]
        assert torch.ones(1, device="npu").untyped_storage().is_cuda
    finally:
        ascend_compat.deactivate()
    after = (_StorageBase.__dict__["cuda"], TypedStorage.__dict__["cuda"],
             UntypedStorage.__dict__["is_cuda"], TypedStorage.__dict__["is_cuda"])
    assert all(a is b for a, b in zip(after, before))
    assert not torch.ones(1, device="npu").untyped_storage().is_cuda  # torch's own answer again


# --------------------------------------------------------------------------- profiler

def _ops():
    x = torch.randn(32, 32, device="cuda")
    return (x @ x).relu().sum().item()


def test_profiler_cuda_activity_profiles_npu(shim, tmp_path):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        _ops()
    assert ProfilerActivity.CUDA not in prof.activities
    assert ProfilerActivity.PrivateUse1 in prof.activities and ProfilerActivity.CPU in prof.activities
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=10)
    assert "aten::mm" in table or "aten::matmul" in table
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    names = {e.get("name") for e in json.loads(trace.read_text())["traceEvents"]}
    assert "aten::relu" in names
    assert shim.cuda_shim.registry.counters()["ProfilerActivity.CUDA"] >= 1


def test_profiler_use_cuda_and_cuda_only(shim):
    from torch.profiler import ProfilerActivity, profile

    import inspect

    if "use_cuda" in inspect.signature(profile.__init__).parameters:  # removed in torch 2.14
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # deprecated upstream
            with profile(use_cuda=True) as prof:
                _ops()
        assert ProfilerActivity.PrivateUse1 in prof.activities and ProfilerActivity.CUDA not in prof.activities
        assert len(prof.key_averages()) > 0
    # CUDA alone: without the shim torch raises "Legacy CUDA profiling requires use_cpu=True"
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        _ops()
    assert prof.activities == {ProfilerActivity.PrivateUse1}


def test_profiler_keeps_experimental_config(shim):
    from torch._C._profiler import _ExperimentalConfig
    from torch.profiler import ProfilerActivity, profile

    config = _ExperimentalConfig(verbose=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # nothing is dropped, so nothing to warn about
        prof = profile(activities=[ProfilerActivity.CUDA], experimental_config=config)
    assert prof.experimental_config is config


def test_profiler_patch_restored_by_identity():
    import ascend_compat
    from torch.profiler.profiler import _KinetoProfile

    before = _KinetoProfile.__dict__["__init__"]
    ascend_compat.deactivate()
    ascend_compat.activate("simulator")
    try:
        assert _KinetoProfile.__dict__["__init__"] is not before
    finally:
        ascend_compat.deactivate()
    assert _KinetoProfile.__dict__["__init__"] is before


# --------------------------------------------------------------------------- cpp_extension

def test_include_paths_cuda_device_type(shim):
    import torch.utils.cpp_extension as ext

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        paths = ext.include_paths(device_type="cuda")
    assert paths == ext.include_paths(device_type="cpu") and paths
    assert ext.include_paths("cuda") == paths


@pytest.mark.skipif(__import__("torch.utils.cpp_extension").utils.cpp_extension.CUDA_HOME is not None,
                    reason="a CUDA toolkit is installed here: CUDA builds are left to torch")
def test_cuda_builds_raise_clear_error_cpu_builds_untouched(shim, tmp_path):
    import torch.utils.cpp_extension as ext
    from ascend_compat.cuda_shim.patches.cpp_extension import CUDAExtensionUnsupported

    with pytest.raises(CUDAExtensionUnsupported, match="Ascend C.*ascend-compat check"):
        ext.CUDAExtension("k", ["kernel.cu"])
    (tmp_path / "kernel.cu").write_text("__global__ void k() {}\n")
    with pytest.raises(CUDAExtensionUnsupported, match=r"load\('k'\) with \.cu sources"):
        ext.load("k", [str(tmp_path / "kernel.cu")], build_directory=str(tmp_path))
    with pytest.raises(CUDAExtensionUnsupported, match="cuda_sources"):
        ext.load_inline("k", "", cuda_sources="__global__ void k() {}")
    cpp = ext.CppExtension("k", ["k.cpp"])
    assert cpp.sources == ["k.cpp"]


def test_cpp_extension_patches_restored_by_identity():
    import ascend_compat
    import torch.utils.cpp_extension as ext

    names = ("include_paths", "CUDAExtension", "load", "load_inline")
    before = [getattr(ext, n) for n in names]
    ascend_compat.deactivate()
    ascend_compat.activate("simulator")
    try:
        assert all(getattr(ext, n) is not b for n, b in zip(names, before))
    finally:
        ascend_compat.deactivate()
    assert all(getattr(ext, n) is b for n, b in zip(names, before))


# --------------------------------------------------------------------------- torch.compile

def test_compile_eager_and_aot_eager_on_npu(shim):
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).cuda()
    x = torch.randn(4, 8, device="cuda")
    expected = model(x)
    for backend in ("eager", "aot_eager"):
        torch._dynamo.reset()
        out = torch.compile(model, backend=backend)(x)
        assert out.device.type == "npu"
        assert torch.allclose(out.cpu(), expected.cpu())
        out.sum().backward()
    torch._dynamo.reset()


def test_after_deactivation_dynamo_knows_torchs_own_factories_again():
    """Was: a compile under the shim cached dynamo's rule maps with the shim's factory wrappers in them;
    after deactivate(), torch.arange (back to torch's own) was "a builtin dynamo does not know how to
    trace", so fullgraph=True failed (seen when the suite ran a shim test and a simulator test in one
    process)."""
    proc = run_python("""
        import torch, ascend_compat
        ascend_compat.activate("simulator")
        fn = lambda x: x + torch.arange(0, 4, device=x.device)
        torch.compile(fn, backend="eager")(torch.ones(4, device="cuda"))
        ascend_compat.deactivate()
        torch._dynamo.reset()
        out = torch.compile(fn, backend="aot_eager", fullgraph=True)(torch.ones(4, device="npu"))
        print("OUT", out.cpu().tolist())
    """, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OUT [1.0, 2.0, 3.0, 4.0]" in proc.stdout


def test_compile_default_backend_on_npu_falls_back_with_warning():
    """Inductor has no npu codegen on the simulator: compiled with aot_eager, warned once, trains;
    CPU graphs in the same process still go to inductor (has_triton is not forced off)."""
    proc = run_python("""
        import warnings, torch
        from ascend_compat import simulator
        simulator.install()
        import ascend_compat
        ascend_compat.activate("simulator")
        import torch._inductor.compile_fx as cfx
        from torch.utils._triton import has_triton
        assert getattr(cfx.compile_fx, "__ascend_compat__", False)
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).cuda()
        x = torch.randn(4, 8, device="cuda")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = torch.compile(model)(x)
            out.sum().backward()
        msgs = [str(w.message) for w in caught if "ascend-compat" in str(w.message)]
        assert len(msgs) == 1 and "aot_eager" in msgs[0] and "torchair" in msgs[0], msgs
        assert out.device.type == "npu" and torch.allclose(out.cpu(), model(x).cpu())
        assert model[0].weight.grad is not None
        print("COUNT", ascend_compat.cuda_shim.registry.counters()["torch.compile(inductor)->aot_eager"])
        original = cfx.compile_fx
        from torch._dynamo.device_interface import CudaInterface
        interface_is_available = CudaInterface.__dict__["is_available"]
        assert getattr(interface_is_available.__func__, "__ascend_compat__", False)
        ascend_compat.deactivate()
        assert cfx.compile_fx is original.__wrapped__
        assert CudaInterface.__dict__["is_available"].__func__ is interface_is_available.__func__.__wrapped__
        print("HAS_TRITON_UNCHANGED", has_triton is torch.utils._triton.has_triton)
    """, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "COUNT " in proc.stdout and "HAS_TRITON_UNCHANGED True" in proc.stdout


def test_compile_inductor_on_cpu_tensors_untouched_under_shim():
    """Inductor's view of CUDA is the real one (with triton installed it would otherwise start triton's
    CUDA driver for a CPU graph and fail on libcuda.so)."""
    proc = run_python("""
        import warnings, torch
        from ascend_compat import simulator
        simulator.install()
        import ascend_compat
        ascend_compat.activate("simulator")
        from torch._dynamo.device_interface import CudaInterface
        assert torch.cuda.is_available() and not CudaInterface.is_available()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f = torch.compile(lambda a: (a * 2).sin())
            a = torch.randn(8)
            assert torch.allclose(f(a), (a * 2).sin())
        assert not [w for w in caught if "ascend-compat" in str(w.message)]
        assert ascend_compat.cuda_shim.registry.counters().get("torch.compile(inductor)->aot_eager", 0) == 0
        print("OK")
    """, timeout=240)
    if proc.returncode != 0 and "InvalidCxxCompiler" in proc.stderr:
        pytest.skip("no C++ compiler for inductor's CPU backend on this machine")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OK" in proc.stdout


def test_compiled_factories_on_the_device_stay_in_one_graph_and_revert():
    """Factories inside compiled code (issue 23, items 9 and 13): the shim's wrappers are graph calls
    (no graph break, their device translation applied), dynamo never traces the shim's or the
    simulator's Python, torch.fx's generated code finds ``device`` (torch.device is the stand-in), and
    deactivation takes the rules back."""
    proc = run_python("""
        import torch
        from ascend_compat import simulator
        simulator.install()
        import ascend_compat
        ascend_compat.activate("simulator")
        from torch._dynamo import trace_rules
        from torch._dynamo.utils import counters
        x = torch.ones(8, device="cuda")
        calls = [
            lambda i: i + torch.arange(0, 8, device=i.device),
            lambda i: torch.tensor([1.0], device=i.device) + i,
            lambda i: torch.full((8,), 2.0, device=i.device) * i,
            lambda i: torch.zeros(8, device="cuda") + i,
            lambda i: i + torch.arange(0, i.size(0), dtype=torch.long, device=i.device),
        ]
        results = []
        for backend in ("aot_eager", "inductor"):
            for dynamic in (False, True):
                for fn in calls:
                    torch._dynamo.reset()
                    counters.clear()
                    out = torch.compile(fn, backend=backend, dynamic=dynamic, fullgraph=True)(x)
                    results.append(out.device.type == "npu" and torch.equal(out.cpu(), fn(x).cpu()))
        wrapper = torch.arange
        skipped = trace_rules.check_file(simulator.__file__).skipped
        allowed = id(wrapper) in trace_rules._allowed_callable_ids
        ascend_compat.deactivate()
        print("RESULT", sum(results), len(results), skipped, allowed,
              id(wrapper) in trace_rules._allowed_callable_ids, torch.device == torch.device)
    """, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "RESULT 20 20 True True False True" in proc.stdout, proc.stdout[-2000:]
