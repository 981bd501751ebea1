"""float64 policy: OFF (default: the backend decides, as torch_npu does) / WARN / SILENT / ERROR."""
from __future__ import annotations

import warnings

import pytest
import torch

from ascend_compat.cuda_shim.dtype_manager import DTypePolicy, apply_dtype_policy, current_policy

pytestmark = pytest.mark.usefixtures("shim")


@pytest.fixture(autouse=True)
def _restore_policy():
    previous = current_policy()
    yield
    apply_dtype_policy(previous)


def test_default_is_off():
    assert current_policy() is DTypePolicy.OFF


def test_warn_converts_device_float64_and_warns():
    apply_dtype_policy(DTypePolicy.WARN)
    with pytest.warns(RuntimeWarning, match="float64"):
        t = torch.zeros(2, dtype=torch.float64, device="cuda")
    assert t.dtype == torch.float32 and t.device.type == "npu"
    with pytest.warns(RuntimeWarning):
        assert torch.ones(2, dtype=torch.float64).cuda().dtype == torch.float32
    with pytest.warns(RuntimeWarning):
        assert torch.ones(2, dtype=torch.float64).to("cuda").dtype == torch.float32
    with pytest.warns(RuntimeWarning):
        assert torch.ones(2).to("cuda", torch.float64).dtype == torch.float32
    with pytest.warns(RuntimeWarning):
        assert torch.nn.Linear(2, 2).double().to("cuda").weight.dtype == torch.float32


def test_cpu_float64_is_never_touched():
    apply_dtype_policy("silent")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.zeros(2, dtype=torch.float64).dtype == torch.float64
        on_device = torch.zeros(2, device="cuda")
        assert on_device.cpu().to(torch.float64).dtype == torch.float64
        assert torch.nn.Linear(2, 2).double().weight.dtype == torch.float64


def test_silent_converts_without_warning():
    apply_dtype_policy(DTypePolicy.SILENT)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.cuda.DoubleTensor([1.0, 2.0]).dtype == torch.float32


def test_error_raises_naming_the_call():
    apply_dtype_policy(DTypePolicy.ERROR)
    with pytest.raises(TypeError, match="torch.cuda.DoubleTensor.*DTypePolicy.WARN"):
        torch.cuda.DoubleTensor([1.0])
    with pytest.raises(TypeError, match="float64"):
        torch.ones(1, dtype=torch.float64, device="cuda")


def test_bad_policy_name():
    with pytest.raises(ValueError, match="OFF, WARN, SILENT, ERROR"):
        apply_dtype_policy("sometimes")


def test_off_leaves_float64_to_the_backend_which_follows_torch_npu():
    # OFF changes nothing: factories and moves give float64 npu tensors (as on real NPUs), and the
    # backend's own rule turns a dtype-only cast of an npu tensor into float32 (torch_npu _to_copy)
    assert current_policy() is DTypePolicy.OFF
    assert torch.zeros(2, dtype=torch.float64, device="cuda").dtype == torch.float64
    assert torch.ones(2, dtype=torch.float64).cuda().dtype == torch.float64
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch_npu's one-time downcast message
        assert torch.ones(2, device="cuda").double().dtype == torch.float32
