"""The public-API assertions of torch_npu's own transfer_to_npu tests
(``test/contrib/test_transfer_to_npu.py`` / ``_env.py``), re-expressed against ascend-compat.

Helper-level upstream tests (private ``_wrapper_*`` functions) are covered by the equivalent
behaviour of our public API, noted per test. One deliberate difference: upstream expects dict *keys*
such as ``"cuda_version"`` to be rewritten; we never rewrite arbitrary strings (see test_regressions).
"""
from __future__ import annotations

import builtins
import socket

import pytest
import torch

pytestmark = pytest.mark.usefixtures("shim")


def test_generator():
    assert torch.Generator().device.type == "cpu"
    for g in (torch.Generator("cuda"), torch.Generator(torch.device("cuda")), torch.Generator(device="cuda")):
        assert g.device.type == "npu"
        assert isinstance(g, torch.Generator)


def test_wrap_isinstance():
    assert builtins.isinstance is isinstance
    with pytest.raises(TypeError):
        isinstance(1, [int])
    torch.cuda.device(-1)  # constructible


def test_amp_classes_are_usable_from_torch_cuda_amp():
    with torch.cuda.amp.autocast():
        out = torch.ones(2, 2, device="cuda") @ torch.ones(2, 2, device="cuda")
    assert out.dtype == torch.float16 and out.device.type == "npu"
    assert torch.cuda.amp.GradScaler()._device == "npu"


def test_wrap_device():
    device = torch.device("cuda:0")
    torch.cuda.set_device(device)
    t = torch.randint(1, 5, (2, 3), device=device)
    assert t.device.type == "npu"


def test_wrap_device_int_type():
    t = torch.ones(2)
    assert t.to(device=0).device.type == "npu"
    assert t.to(0).device.type == "npu"
    assert torch.tensor(1, device=0).device.type == "npu"


@pytest.mark.parametrize("make", [
    lambda: torch.autocast("cuda"),
    lambda: torch.autocast(device_type="cuda"),
    lambda: torch.amp.autocast("cuda"),
    lambda: torch.amp.autocast(device_type="cuda"),
])
def test_wrap_autocast(make):
    a = torch.randn(4, 4, device="cuda")
    with make():
        assert (a @ a).dtype == torch.float16


def test_device_meta():
    with torch.device("meta"):
        assert torch.nn.Linear(2, 2).weight.device.type == "meta"


def test_set_default_device():
    try:
        torch.set_default_device("cuda")
        assert torch.ones(1).device.type == "npu"
    finally:
        torch.set_default_device(None)


def test_device_context():
    with torch.device("cuda"):
        assert torch.ones(1).device.type == "npu"


def test_data_loader_pin_memory():
    ds = torch.utils.data.TensorDataset(torch.arange(8.0))
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=0, pin_memory=True, pin_memory_device="cuda")
    batch = next(iter(loader))[0]
    assert batch.is_pinned()


def test_replace_to_method_in_allowed_methods():
    from torch.nn.parameter import UninitializedTensorMixin

    assert torch.Tensor.to in UninitializedTensorMixin._allowed_methods
    lazy = torch.nn.LazyLinear(3).to("cuda")
    lazy(torch.ones(2, 4, device="cuda"))
    assert lazy.weight.device.type == "npu"


def test_default_device_backend_map_has_no_cuda_entry():
    assert "cuda" not in torch.distributed.Backend.default_device_backend_map


def test_library_detection_sees_real_cuda():  # upstream: test_wrapper_function
    from ascend_compat.cuda_shim.patches.cuda_namespace import real_cuda

    assert torch.cuda.is_available()
    with real_cuda():
        assert not torch.cuda.is_available()
    assert torch.cuda.is_available()


def test_backend_strings():  # upstream: test_wrapper_hccl_args_and_kwargs
    from ascend_compat.cuda_shim.devices import translate_backend

    assert (translate_backend("nccl"), translate_backend("cpu")) == ("hccl", "cpu")


@pytest.mark.parametrize("args, kwargs", [(("cuda:0",), {"enable_timing": True}), ((), {"device": "cuda:0"})])
def test_torch_event(args, kwargs):
    ev = torch.Event(*args, **kwargs)
    assert str(ev.device).startswith("npu")
    assert isinstance(ev, torch.Event)


@pytest.mark.parametrize("dev", ["cuda:0", torch.device("cuda:0")] if False else ["cuda:0", "device"])
def test_torch_get_device_module(dev):
    dev = torch.device("cuda:0") if dev == "device" else dev
    assert torch.get_device_module(dev) is torch.npu


@pytest.mark.parametrize("dev", [0, "device"])
def test_torch_cuda_current_stream(dev):
    dev = torch.device("cuda:0") if dev == "device" else dev
    assert torch.cuda.current_stream(dev) == torch.npu.current_stream(0)


@pytest.mark.parametrize("dev", [0, "device"])
def test_torch_cuda_utilization(dev):
    torch.cuda.utilization(torch.device("cuda:0") if dev == "device" else dev)


@pytest.mark.parametrize("dev", [0, "device"])
def test_torch_cuda_set_per_process_memory_fraction(dev):
    torch.cuda.set_per_process_memory_fraction(0.5, torch.device("cuda:0") if dev == "device" else dev)
    torch.cuda.set_per_process_memory_fraction(1.0, 0)


@pytest.mark.parametrize("dev", [0, "device"])
def test_torch_cuda_caching_allocator_alloc(dev):
    ptr = torch.cuda.caching_allocator_alloc(1024, torch.device("cuda:0") if dev == "device" else dev)
    torch.cuda.caching_allocator_delete(ptr)


def test_torch_cuda_memory_history_and_snapshot():
    torch.cuda.memory._record_memory_history(device=torch.device("cuda:0"))
    torch.cuda.memory._snapshot(device=torch.device("cuda:0"))
    torch.cuda.memory._record_memory_history(enabled=None)


def test_torch_fft():
    assert str(torch.fft.fftfreq(4, device="cuda:0").device) == "npu:0"
    assert str(torch.fft.rfftfreq(4, device="cuda:0").device) == "npu:0"


def test_torch_autograd_profiler_util_kernel():
    assert torch.autograd.profiler_util.Kernel("x", "cuda", 11).device == "npu"


def test_torch_sparse_compressed_tensor():
    t = torch.sparse_csr_tensor(torch.tensor([0, 1]), torch.tensor([0]), torch.tensor([1.0]), device="cuda:0")
    assert str(t.device) == "npu:0"


def test_torch_utils_cpp_extension_include_paths():
    import torch.utils.cpp_extension as ext

    assert ext.include_paths()  # the cpu default keeps working while active


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_init_process_group_cuda_nccl_single_rank():
    import torch.distributed as dist

    dist.init_process_group("cuda:nccl", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1,
                            device_id=torch.device("cuda:0"))
    try:
        assert dist.get_backend() == "npu:hccl"
        assert dist.get_backend() == "cuda:nccl"  # our addition: CUDA spelling compares equal
        t = torch.ones(2, device="cuda")
        dist.all_reduce(t)
        dist.barrier()
        assert t.tolist() == [1.0, 1.0]
    finally:
        dist.destroy_process_group()


def test_process_group_nccl():  # upstream: ProcessGroupNCCL.Options() from both import paths
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import ProcessGroupNCCL as FromC10d

    import torch_npu

    hccl = torch_npu._C._distributed_c10d.ProcessGroupHCCL
    assert dist.ProcessGroupNCCL is hccl and FromC10d is hccl
    assert isinstance(dist.ProcessGroupNCCL.Options(), hccl.Options)
    assert isinstance(FromC10d.Options(), hccl.Options)


def test_update_cuda_default_generators():
    torch.ones(1, device="cuda")  # initialise the device
    assert len(torch.cuda.default_generators) > 0
    assert tuple(torch.cuda.default_generators) == tuple(torch.npu.default_generators)


def test_device_ids_tuple_and_list():
    from ascend_compat.cuda_shim.devices import translate

    assert translate(("cuda:0", "cuda:1")) == ("npu:0", "npu:1")
    assert translate(["cuda:0", "cuda:1"]) == ["npu:0", "npu:1"]


def test_cuda_replaced_with_env():  # upstream _env variant: same surface after activation
    assert torch.randn(2, device="cuda").device.type == "npu"
    assert isinstance(torch.cuda.current_device(), int)
    assert torch.cuda.current_stream().device.type == "npu"
    assert torch.cuda.Stream().device.type == "npu"
