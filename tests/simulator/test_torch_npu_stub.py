"""The ``torch_npu`` stand-in: import, metadata and find_spec while the simulated NPU is installed."""
from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util

import pytest
import torch

from _subproc import check, run_python


@pytest.fixture(autouse=True)
def _installed(sim):
    return sim


def test_import_torch_npu_gives_the_stand_in():
    import torch_npu

    assert torch_npu._simulated is True
    assert torch_npu.npu is torch.npu
    assert torch_npu.__version__ == importlib.metadata.version("torch_npu")
    assert torch_npu.__version__.count(".") >= 2


def test_distribution_metadata_and_find_spec():
    assert importlib.util.find_spec("torch_npu") is not None
    dist = importlib.metadata.distribution("torch-npu")
    assert dist.metadata["Name"] == "torch_npu"
    assert "simulated" in dist.metadata["Summary"].lower()
    assert importlib.metadata.version("torch-npu") == importlib.metadata.version("torch_npu")
    assert "torch_npu" in importlib.metadata.packages_distributions()
    assert any(d.metadata["Name"] == "torch_npu" for d in importlib.metadata.distributions())


def test_submodules_resolve_to_the_simulated_modules():
    import torch_npu.npu
    from torch_npu.npu.amp import autocast

    assert torch_npu.npu is torch.npu
    assert autocast is torch.npu.amp.autocast
    assert importlib.import_module("torch_npu.npu.memory") is torch.npu.memory
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("torch_npu.no_such_module")


def test_every_custom_op_is_bound_from_torch_ops_npu():
    import torch_npu
    from ascend_compat import data
    from ascend_compat.simulator.torch_npu import _op_registry, fused

    names = _op_registry.op_names()
    assert names == data.custom_ops() & {k.split(".")[0] for k in data.load_table("npu_op_schemas.json")["ops"]}
    for name in names:
        assert getattr(torch_npu, name) is getattr(torch.ops.npu, name)
    assert set(torch_npu.__all__) <= names and "npu_grouped_matmul" in torch_npu.__all__
    assert {k.split(".")[0] for k in fused.OVERLOADS} <= names
    x = torch.randn(2, 8, device="npu")
    gamma = torch.ones(8, device="npu")
    out = torch_npu.npu_rms_norm(x, gamma)[0]
    ref = x.cpu() * torch.rsqrt(x.cpu().pow(2).mean(-1, keepdim=True) + 1e-6)
    torch.testing.assert_close(out.cpu(), ref)
    assert hasattr(torch_npu, "npu_no_such_op") is False
    with pytest.raises(AttributeError, match="has no attribute 'npu_no_such_op'"):
        torch_npu.npu_no_such_op  # noqa: B018


def test_an_op_without_reference_exists_and_says_so_when_called():
    import torch_npu
    from ascend_compat.simulator.torch_npu._op_registry import NotSimulatedError

    assert hasattr(torch_npu, "npu_mla_prolog")  # feature checks see what the real module has
    x = torch.zeros(1, device="npu")
    with pytest.raises(NotSimulatedError, match=r"torch_npu.npu_mla_prolog is not simulated by ascend-compat"
                                                r"[\s\S]*ERR01007 OPS feature not supported"):
        torch_npu.npu_mla_prolog(*([x] * 12))
    assert issubclass(NotSimulatedError, NotImplementedError)


def test_torch_dot_op_is_the_deprecated_alias():
    with pytest.raises(RuntimeError, match=r"torch.npu_rms_norm is deprecated and will be removed in future version. "
                                           r"Use torch_npu.npu_rms_norm instead.[\s\S]*ERR00007 PTA"):
        torch.npu_rms_norm(torch.zeros(1, device="npu"), torch.ones(1, device="npu"))


def test_hf_style_detection_sees_an_npu():
    # what transformers' is_torch_npu_available and accelerate's is_npu_available check
    assert importlib.util.find_spec("torch_npu") is not None
    importlib.metadata.version("torch_npu")
    import torch_npu  # noqa: F401

    assert torch.npu.is_available()


def test_without_the_simulator_torch_npu_is_not_importable():
    out = check(run_python("""
        import importlib.util, importlib.metadata
        import ascend_compat
        print(importlib.util.find_spec("torch_npu") is None)
        try:
            importlib.metadata.version("torch_npu")
            print("found")
        except importlib.metadata.PackageNotFoundError:
            print("absent")
    """))
    assert out.split() == ["True", "absent"]


def test_stand_in_reports_the_emulated_version_in_metadata():
    out = check(run_python("""
        import ascend_compat.simulator as sim
        sim.install(torch_npu_version="2.6")
        import importlib.metadata, torch_npu
        print(torch_npu.__version__, importlib.metadata.version("torch_npu"))
    """))
    assert out.split() == ["2.6.0", "2.6.0"]


def test_fused_ops_refuse_cpu_tensors_as_torch_npu_does():
    import torch_npu

    with pytest.raises(NotImplementedError, match="Could not run 'npu::fast_gelu' with arguments from the 'CPU' backend"):
        torch_npu.fast_gelu(torch.rand(4))
    # one npu tensor among the arguments selects the NPU kernel, which refuses the CPU one
    with pytest.raises(RuntimeError, match=r"Expected NPU tensor, please check whether the input tensor device is "
                                           r"correct[\s\S]*ERR01002 OPS invalid type"):
        torch_npu.npu_rms_norm(torch.rand(2, 8), torch.ones(8, device="npu"))
    assert torch_npu.fast_gelu(torch.rand(4, device="npu")).device.type == "npu"


def test_an_older_emulated_version_has_only_its_own_ops():
    out = check(run_python("""
        import ascend_compat.simulator as sim
        sim.install(torch_npu_version="2.6")
        import torch_npu
        from ascend_compat import data
        print(hasattr(torch_npu, "npu_moe_token_permute"), hasattr(torch_npu, "_npu_fusion_attention_v3_get_max_workspace"),
              "npu_moe_token_permute" in data.custom_ops("2.6"))
    """))
    assert out.split() == ["True", "False", "True"]
