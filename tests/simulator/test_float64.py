"""float64 on the simulated NPU follows torch_npu (ToKernelNpu.cpp ``_to_copy``); opt-in modes report it."""
from __future__ import annotations

import warnings

import pytest
import torch

from ascend_compat import simulator
from ascend_compat.simulator import _float64
from tests.simulator._subproc import check, run_python


def test_default_mode_is_torch_npu():
    assert simulator.config().float64 == "torch_npu"


def test_float64_tensors_exist_on_the_device():
    t = torch.ones(3, dtype=torch.float64, device="npu")
    assert t.dtype == torch.float64 and t.device.type == "npu"
    assert torch.arange(4, dtype=torch.float64, device="npu").tolist() == [0.0, 1.0, 2.0, 3.0]
    moved = torch.tensor([0.1, 0.2], dtype=torch.float64).to("npu")  # CPU's _to_copy: no downcast
    assert moved.dtype == torch.float64 and moved.cpu().tolist() == [0.1, 0.2]
    assert torch.ones(2, device="npu").to("npu", torch.float64).dtype == torch.float64  # device given
    assert torch.zeros(2, dtype=torch.complex128, device="npu").dtype == torch.complex128
    # ops on float64 npu tensors compute in float64
    y = moved * 3
    assert y.dtype == torch.float64 and y.cpu().tolist() == pytest.approx([0.3, 0.6], abs=1e-15)


def test_dtype_only_cast_to_float64_gives_float32_once_warned():
    proc = run_python("""
        import warnings
        import torch
        from ascend_compat import simulator
        simulator.install()
        x = torch.ones(2, device="npu")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # torch_npu's message is printed, not a Python warning
            dtypes = [x.double().dtype, x.to(torch.float64).dtype, x.type(torch.float64).dtype,
                      torch.ones(2, dtype=torch.int64, device="npu").double().dtype]
        print("dtypes", dtypes)
        print("same", torch.ones(2, dtype=torch.float64, device="npu").double().dtype)
    """)
    out = check(proc)
    assert "dtypes [torch.float32, torch.float32, torch.float32, torch.float32]" in out
    # once per process (TORCH_NPU_WARN_ONCE), on stderr through c10's base handler
    assert proc.stderr.count(f"Warning: {_float64.DOWNCAST_MESSAGE}") == 1
    assert "same torch.float64" in out


def test_downcast_rule_is_a_pure_function():
    f32, f64 = torch.float32, torch.float64
    assert _float64.to_copy_dtype(f32, f64) is f32
    assert _float64.to_copy_dtype(torch.int32, f64) is f32
    assert _float64.to_copy_dtype(f64, f64) is f64  # same dtype: no cast
    assert _float64.to_copy_dtype(f32, f64, device=torch.device("npu")) is f64
    assert _float64.to_copy_dtype(f32, f64, layout=torch.strided) is f64
    assert _float64.to_copy_dtype(f32, torch.complex128) is torch.complex128  # only Double is replaced
    assert _float64.to_copy_dtype(f32, None) is None


def test_downcast_keeps_autograd():
    a = torch.ones(2, device="npu", requires_grad=True)
    b = a.double()
    assert b.dtype == torch.float32
    (b * 2).sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]


def test_pytorch_internals_in_float64_still_work():
    # printing upcasts to float64 on the tensor's device; GradScaler uses scale.double().reciprocal()
    x = torch.tensor([1e-8, 1.0, 123456.0], device="npu")
    assert "device='npu:0'" in repr(x)
    m = torch.nn.Linear(3, 1).npu()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("npu")
    with torch.autocast("npu", dtype=torch.float16):
        loss = m(x[None]).float().sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert m.weight.grad is not None and torch.isfinite(m.weight).all()


def test_warn_and_allow_modes():
    with simulator.policy(float64="warn"):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            t = torch.ones(2, dtype=torch.float64, device="npu")
            d = torch.ones(2, device="npu").double()
        assert t.dtype == torch.float64 and d.dtype == torch.float32
        texts = [str(w.message) for w in rec]
        assert any("float64 tensor of 2 element(s) created on the simulated NPU" in m for m in texts)
        assert any("returns float32, as torch_npu does" in m for m in texts)
    with simulator.policy(float64="allow"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            t = torch.ones(2, device="npu").double() * 2
        assert t.dtype == torch.float64 and t.tolist() == [2.0, 2.0]
    assert torch.ones(2, device="npu").double().dtype == torch.float32  # back to the installed mode
    with pytest.raises(ValueError, match="float64 policy must be one of"):
        with simulator.policy(float64="sometimes"):
            pass


def test_removed_error_mode_is_refused_with_guidance():
    with pytest.raises(simulator.SimConfigError, match="'error' was removed.*'strict'"):
        with simulator.policy(float64="error"):
            pass


def test_strict_mode_reports_every_float64_use():
    out = check(run_python("""
        import torch
        from ascend_compat import simulator
        simulator.install(float64="strict")
        print("config", simulator.config().float64)
        for make in (lambda: torch.tensor(1.0, dtype=torch.float64, device="npu"),
                     lambda: torch.ones(2, dtype=torch.float64).to("npu"),
                     lambda: torch.ones(2, device="npu").double()):
            try:
                make()
                print("accepted")
            except TypeError as e:
                print("rejected", "strict" in str(e))
        print(torch.ones(2, device="npu"))
    """))
    assert "config strict" in out and out.count("rejected True") == 3 and "accepted" not in out
    assert "device='npu:0'" in out


def test_ops_torch_npu_refuses_in_float64_raise_its_errors():
    x = torch.rand(5, dtype=torch.float64, device="npu")
    # op-plugin's sort.stable kernel refuses float64 itself (TORCH_CHECK + ERR01002)
    with pytest.raises(RuntimeError, match=r"Input data type should not be float64[\s\S]*ERR01002 OPS invalid type"):
        torch.sort(x, stable=True)
    # torch_npu records aclnnMaxDim without DT_DOUBLE: aclnn status 161002 and CANN's EZ1001 text
    with pytest.raises(RuntimeError, match=r"call aclnnMaxDim failed, error code is 161002[\s\S]*EZ1001"):
        torch.max(x, dim=0)
    # the same ops in float32, other float64 ops, and float64 without dim keep working
    assert torch.sort(x.float(), stable=True)[0].dtype == torch.float32
    assert torch.sort(x)[0].dtype == torch.float64  # sort.default: a kernel without the check
    assert torch.max(x).dtype == torch.float64
    with simulator.policy(float64="allow"):
        assert torch.max(x, dim=0).values.dtype == torch.float64


def test_float64_table_has_provenance_and_the_downcast_message():
    from ascend_compat import data

    table = data.load_table("dtype_support.json")
    assert "ToKernelNpu.cpp" in table["_source"] and table["_generated_by"] == "tools/gen_dtype_support.py"
    assert table["to_copy_downcast"]["message"] == _float64.DOWNCAST_MESSAGE
    assert "sort.stable" in table["refuses_float64"]
    assert "max.dim" in table["aclnn_dtype_gaps"]["aclnnMaxDim"]["aten"]
    assert table["aclnn_dtype_gaps"]["aclnnMaxDim"]["dtypes"] == ["DT_DOUBLE"]


def test_conversion_kernel_keeps_torch_semantics():
    # the npu _to_copy kernel copies host to host: strides, memory format and values as on CPU
    cpu = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    x = cpu.to("npu")
    for conv in (lambda t: t.half(), lambda t: t.to("cpu"), lambda t: t.to(torch.int32),
                 lambda t: t[:, ::2].float(), lambda t: t.transpose(0, 3).cpu(),
                 lambda t: t.to(torch.float16, memory_format=torch.contiguous_format)):
        got, ref = conv(x), conv(cpu)
        assert got.dtype == ref.dtype and got.shape == ref.shape and got.stride() == ref.stride()
        torch.testing.assert_close(got.cpu(), ref)
    z = torch.randn(3, dtype=torch.complex64)
    assert torch.equal(z.to("npu").conj().cpu(), z.conj())
    assert x.to("npu").data_ptr() == x.data_ptr()  # no-op conversions stay aliases
