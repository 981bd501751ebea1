"""Quantized npu tensors: torch_npu 2.14.0's QuantizedPrivateUse1 kernel set, values as on the CPU,
every other op refused by torch's dispatcher as on torch_npu, device memory accounted."""
from __future__ import annotations

import gc
import warnings

import pytest
import torch

from ascend_compat.simulator import _cext, _memory, _quantized_ops
from tests.simulator._subproc import check, run_python

pytestmark = [
    pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning"),
    pytest.mark.skipif(_quantized_ops.unavailable_reason() is not None,
                       reason=f"the simulator's C++ part is not loaded here: {_cext.hooks_unavailable_reason()}"),
]

QDTYPES = [torch.qint8, torch.quint8, torch.qint32]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation warning for quantized factories
        yield


def _data(shape=(3, 4)):
    return torch.linspace(-2.5, 3.0, int(torch.tensor(shape).prod())).reshape(shape)


@pytest.mark.parametrize("dtype", QDTYPES)
def test_quantize_per_tensor_on_npu_matches_the_cpu(dtype):
    x = _data()
    zero_point = 3 if dtype != torch.quint8 else 128
    q = torch.quantize_per_tensor(x.to("npu"), 0.05, zero_point, dtype)
    ref = torch.quantize_per_tensor(x, 0.05, zero_point, dtype)
    assert (q.device, q.dtype, q.is_quantized, q.shape) == (torch.device("npu", 0), dtype, True, x.shape)
    assert "QuantizedPrivateUse1" in str(torch._C._dispatch_keys(q))
    assert (q.q_scale(), q.q_zero_point(), q.qscheme()) == (0.05, zero_point, torch.per_tensor_affine)
    rep = q.int_repr()
    assert rep.device.type == "npu" and rep.dtype == ref.int_repr().dtype
    assert torch.equal(rep.cpu(), ref.int_repr())
    deq = q.dequantize()
    assert deq.device.type == "npu" and torch.equal(deq.cpu(), ref.dequantize())


@pytest.mark.parametrize("dtype", [torch.qint8, torch.quint8])
@pytest.mark.parametrize("axis", [0, 1])
def test_quantize_per_channel_on_npu_matches_the_cpu(dtype, axis):
    x = _data()
    n = x.shape[axis]
    scales = torch.linspace(0.02, 0.1, n, dtype=torch.float64)
    zero_points = torch.arange(n) + (0 if dtype == torch.qint8 else 100)
    q = torch.quantize_per_channel(x.to("npu"), scales, zero_points, axis, dtype)
    ref = torch.quantize_per_channel(x, scales, zero_points, axis, dtype)
    assert q.device.type == "npu" and q.qscheme() == torch.per_channel_affine
    assert q.q_per_channel_axis() == axis
    # the quantizer's tensors live on the npu (torch's per-channel factory moves them to the device)
    assert q.q_per_channel_scales().device.type == "npu"
    assert torch.equal(q.q_per_channel_scales().cpu(), ref.q_per_channel_scales())
    assert torch.equal(q.q_per_channel_zero_points().cpu(), ref.q_per_channel_zero_points())
    assert torch.equal(q.int_repr().cpu(), ref.int_repr())
    assert torch.equal(q.dequantize().cpu(), ref.dequantize())


def test_empty_affine_quantized_on_npu():
    q = torch._empty_affine_quantized((2, 5), scale=0.5, zero_point=7, dtype=torch.quint8, device="npu")
    assert (q.device.type, q.dtype, q.shape, q.q_scale(), q.q_zero_point()) == ("npu", torch.quint8, (2, 5), 0.5, 7)
    with pytest.raises(RuntimeError, match="Quantized tensors do not support pin_memory"):
        torch._empty_affine_quantized((2,), scale=0.5, zero_point=0, dtype=torch.qint8, device="npu",
                                      pin_memory=True)


def test_views_clone_flip_and_copy_keep_the_int_representation():
    x = _data((4, 6))
    q = torch.quantize_per_tensor(x.to("npu"), 0.1, 2, torch.qint8)
    ref = torch.quantize_per_tensor(x, 0.1, 2, torch.qint8)
    assert torch.equal(q.view(6, 4).int_repr().cpu(), ref.view(6, 4).int_repr())
    assert torch.equal(q[1:3].int_repr().cpu(), ref[1:3].int_repr())
    t = q.t()
    assert t.device.type == "npu" and torch.equal(t.int_repr().cpu(), ref.t().int_repr())
    # torch_npu's quantized view: a rank-1 view of a non-viewable tensor is a contiguous copy (torch raises)
    assert torch.equal(t.view(-1).int_repr().cpu(), ref.t().reshape(-1).int_repr())
    assert torch.equal(t.contiguous().int_repr().cpu(), ref.t().contiguous().int_repr())
    assert torch.equal(q.flip(0).int_repr().cpu(), ref.flip(0).int_repr())
    c = q.clone()
    assert c.data_ptr() != q.data_ptr() and torch.equal(c.int_repr().cpu(), ref.int_repr())
    dst = torch.empty_like(q)
    assert (dst.q_scale(), dst.q_zero_point()) == (0.1, 2)
    dst.copy_(q)
    assert torch.equal(dst.int_repr().cpu(), ref.int_repr())


def test_unregistered_ops_fail_as_on_torch_npu():
    q = torch.quantize_per_tensor(_data().to("npu"), 0.1, 0, torch.qint8)
    backend = "'Quantizednpu' backend"  # torch names QuantizedPrivateUse1 after the renamed backend
    with pytest.raises(NotImplementedError, match=rf"^Could not run 'aten::add.out' with arguments from the {backend}"):
        q + 1
    # torch_npu registers no QuantizedPrivateUse1 empty_quantized, which Tensor.to() needs for a
    # quantized tensor: moving one between the CPU and npu fails on torch_npu 2.14.0 too
    with pytest.raises(NotImplementedError, match=rf"^Could not run 'aten::empty_quantized' .*{backend}"):
        q.cpu()
    qc = torch.quantize_per_tensor(_data(), 0.1, 0, torch.qint8)
    with pytest.raises(NotImplementedError, match=rf"^Could not run 'aten::empty_quantized' .*{backend}"):
        qc.to("npu")
    # nor _empty_per_channel_affine_quantized, which empty_like/clone of a per-channel tensor need
    qp = torch.quantize_per_channel(_data().to("npu"), torch.tensor([0.1, 0.2, 0.3]), torch.tensor([0, 0, 0]), 0,
                                    torch.qint8)
    with pytest.raises(NotImplementedError,
                       match=rf"^Could not run 'aten::_empty_per_channel_affine_quantized' .*{backend}"):
        qp.clone()
    # the documented ways across devices
    assert torch.equal(q.dequantize().cpu(), torch.quantize_per_tensor(_data(), 0.1, 0, torch.qint8).dequantize())
    assert torch.equal(qc.dequantize().to("npu").cpu(), qc.dequantize())


def test_unsupported_dtype_is_refused_clearly():
    with pytest.raises(RuntimeError, match=r"quantized npu tensors of dtype torch.quint4x2 are not simulated"):
        torch.quantize_per_tensor(_data().to("npu"), 0.1, 0, torch.quint4x2)


def test_memory_is_accounted_and_freed():
    gc.collect()
    stats0 = _memory.memory_stats(0)
    base = _memory.memory_allocated(0)
    x = _data((100, 10)).to("npu")  # 4000 bytes
    after_x = _memory.memory_allocated(0)
    q = torch.quantize_per_tensor(x, 0.1, 0, torch.qint32)  # 1000 int32: 4000 bytes
    assert _memory.memory_allocated(0) - after_x == _memory.round_size(4000)
    q8 = torch.quantize_per_tensor(x, 0.1, 0, torch.qint8)  # 1000 bytes
    assert _memory.memory_allocated(0) - after_x == _memory.round_size(4000) + _memory.round_size(1000)
    v = q8[10:20]  # a view allocates nothing and keeps the storage alive
    del q, q8, x
    gc.collect()
    assert _memory.memory_allocated(0) - base == _memory.round_size(1000)
    del v
    gc.collect()
    assert _memory.memory_allocated(0) == base
    stats = _memory.memory_stats(0)
    assert stats["allocation.all.allocated"] - stats0["allocation.all.allocated"] == 3
    assert stats["allocation.all.freed"] - stats0["allocation.all.freed"] == 3


def test_capacity_applies_to_quantized_tensors():
    out = check(run_python("""
import warnings
warnings.simplefilter("ignore")
import ascend_compat.simulator as sim
sim.install(memory_capacity="2M")
import torch
x = torch.zeros(250_000, device="npu")  # two 1 MB blocks fill the one 2 MiB small segment that fits
y = torch.zeros(250_000, device="npu")
try:
    torch._empty_affine_quantized((600_000,), scale=1.0, zero_point=0, dtype=torch.qint8, device="npu")
except torch.OutOfMemoryError as exc:
    print("oom", str(exc).startswith("NPU out of memory. Tried to allocate 2.00 MiB"))
"""))
    assert out.split() == ["oom", "True"]


def test_without_the_cpp_part_quantized_npu_tensors_are_refused(tmp_path):
    out = check(run_python("""
import warnings
warnings.simplefilter("ignore")
import ascend_compat.simulator as sim
sim.install()
import torch
for make in (lambda: torch.quantize_per_tensor(torch.ones(3, device="npu"), 0.1, 0, torch.qint8),
             lambda: torch._empty_affine_quantized((3,), scale=0.1, zero_point=0, dtype=torch.qint8, device="npu")):
    try:
        make()
    except NotImplementedError as exc:
        print(str(exc).startswith("quantized tensors on the npu device need the simulated NPU's C++ part"),
              "no C++ compiler was found" in str(exc))
""", env={"TORCH_EXTENSIONS_DIR": str(tmp_path), "CXX": "no-such-compiler"}))
    assert out.split() == ["True", "True", "True", "True"]


def test_copy_between_the_cpu_and_npu_with_the_same_quantizer():
    # torch_npu's _copy_from copies the int representation: with empty_affine_quantized on the
    # target device this crosses devices, where .to() cannot
    qc = torch.quantize_per_tensor(_data(), 0.1, 1, torch.quint8)
    qn = torch._empty_affine_quantized(qc.shape, scale=0.1, zero_point=1, dtype=torch.quint8, device="npu")
    qn.copy_(qc)
    assert qn.device.type == "npu" and torch.equal(qn.int_repr().cpu(), qc.int_repr())
    back = torch._empty_affine_quantized(qc.shape, scale=0.1, zero_point=1, dtype=torch.quint8)
    back.copy_(qn)
    assert back.device.type == "cpu" and torch.equal(back.int_repr(), qc.int_repr())
    other = torch._empty_affine_quantized(qc.shape, scale=0.2, zero_point=1, dtype=torch.quint8, device="npu")
    with pytest.raises(NotImplementedError, match="different quantizers"):
        other.copy_(qn)


def test_second_device():
    out = check(run_python("""
import warnings
warnings.simplefilter("ignore")
import ascend_compat.simulator as sim
sim.install(devices=2)
import torch
from ascend_compat.simulator import _memory
x = torch.randn(4, 4)
q = torch.quantize_per_tensor(x.to("npu:1"), 0.1, 0, torch.qint8)
e = torch._empty_affine_quantized((3,), scale=1.0, zero_point=0, dtype=torch.qint8, device="npu:1")
print(q.device, e.device, q.clone().device, torch.npu.current_device(), _memory.memory_allocated(0) == 0,
      _memory.memory_allocated(1) > 0)
print(torch.equal(q.dequantize().cpu(), torch.quantize_per_tensor(x, 0.1, 0, torch.qint8).dequantize()))
"""))
    assert out.split() == ["npu:1", "npu:1", "npu:1", "0", "True", "True", "True"]


def test_kernel_set_follows_the_emulated_torch_npu():
    newest = set(_quantized_ops.kernels())
    assert {"dequantize.self", "int_repr", "_empty_affine_quantized", "q_scale", "qscheme", "view", "clone",
            "_copy_from", "flip"} <= newest
    assert "empty_quantized" not in newest and "_empty_per_channel_affine_quantized" not in newest
    assert set(_quantized_ops.kernels("2.9.1")) == {"dequantize.self", "int_repr", "_empty_affine_quantized",
                                                *_quantized_ops.READERS}
    assert set(_quantized_ops.kernels("2.7.1")) == newest
    assert _quantized_ops.kernels("2.1.0") == ()
    # the dispatcher shows torch_npu's set, nothing more
    registered = {name for name in newest
                  if torch._C._dispatch_has_kernel_for_dispatch_key(
                      "aten::" + name if "." in name else f"aten::{name}", "QuantizedPrivateUse1")}
    assert registered == newest


def test_an_older_torch_npu_without_the_view_kernels():
    out = check(run_python("""
import warnings
warnings.simplefilter("ignore")
import ascend_compat.simulator as sim
sim.install(torch_npu_version="2.9.1")
import torch
q = torch.quantize_per_tensor(torch.ones(2, 3, device="npu"), 0.5, 0, torch.qint8)
print(q.dequantize().cpu().tolist() == [[1.0] * 3] * 2, q.q_scale())
# torch's composite clone reaches empty_strided, which this torch_npu does not register either
for name, fn in (("view", lambda: q.view(3, 2)), ("empty_strided", lambda: q.clone())):
    try:
        fn()
    except NotImplementedError as exc:
        print(name, str(exc).startswith(f"Could not run 'aten::{name}' with arguments from the 'Quantizednpu' backend"))
"""))
    assert out.split() == ["True", "0.5", "view", "True", "empty_strided", "True"]


def test_a_cpu_fallback_with_a_quantized_result_fails_moving_it_back():
    # quantize_per_tensor.tensor_qparams has no torch_npu kernel: its CPU fallback moves the
    # quantized result to the npu with .to(), which has no QuantizedPrivateUse1 path
    x = _data().to("npu")
    with pytest.raises(NotImplementedError, match=r"^Could not run 'aten::empty_quantized' .*'Quantizednpu' backend"):
        torch.quantize_per_tensor(x, torch.tensor(0.1), torch.tensor(0), torch.qint8)


def test_torch_npu_wording_of_the_shape_kernels():
    q = torch.quantize_per_tensor(_data((4, 6)).to("npu"), 0.1, 0, torch.qint8)
    with pytest.raises(RuntimeError, match=r"^view size is not compatible .*Use \.reshape\(\.\.\.\) instead\.\n"
                                           r"\[ERROR\] .* ERR01001 OPS invalid parameter"):
        q.t().view(2, 12)
    q4 = q.view(1, 2, 3, 4)
    with pytest.raises(RuntimeError, match=r"^NPU quantized clone only supports Contiguous or Preserve"):
        q4.clone(memory_format=torch.channels_last)
    # contiguous is CompositeImplicitAutograd: its math kernel runs at AutogradPrivateUse1 and calls
    # clone, so torch_npu's (and the simulator's) QuantizedPrivateUse1 contiguous kernel is not reached
    with pytest.raises(RuntimeError, match=r"^NPU quantized clone only supports Contiguous or Preserve"):
        q4.contiguous(memory_format=torch.channels_last)
    below_autograd = torch._C.DispatchKeySet(torch._C.DispatchKey.QuantizedPrivateUse1)
    with pytest.raises(RuntimeError, match=r"^NPU quantized contiguous supports Contiguous memory format only\."):
        torch.ops.aten.contiguous.default.redispatch(below_autograd, q4, memory_format=torch.channels_last)
    flat = torch.ops.aten.ravel.default.redispatch(below_autograd, q.t())
    assert flat.shape == (24,) and torch.equal(flat.int_repr().cpu(), q.t().int_repr().cpu().reshape(-1))
    with pytest.raises(RuntimeError, match=r"^It is currently not supported to specify a dtype that doesn't match"):
        torch.empty_like(q, dtype=torch.quint8)
