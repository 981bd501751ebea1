"""Dtypes torch_npu's kernels refuse beyond float64 (``_dtype_support``, table ``dtype_support.json``).

The records come from torch_npu's maintainers ("aclnnIsClose not implemented for DT_BFLOAT16");
torch_npu's disabled-test list agrees: ``test_view_tensor_hsplit`` (compares bfloat16/complex values
with ``assertEqual``, i.e. ``torch.isclose`` on the device) is disabled on NPUs for bfloat16 and
complex, while ``test_view_tensor_split`` (same dtypes, no value comparison) is enabled.
"""
from __future__ import annotations

import pytest
import torch

from ascend_compat import data
from ascend_compat.simulator import _dtype_support


def _expect_aclnn(api: str, cann: str):
    return pytest.raises(RuntimeError, match=rf"(?s)call {api} failed, error code is 161002.*EZ1001.*{cann}")


@pytest.mark.parametrize("dtype,cann", [(torch.bfloat16, "DT_BFLOAT16"), (torch.complex64, "DT_COMPLEX64")])
def test_isclose_refuses_the_dtypes_aclnn_lacks(dtype, cann):
    x = torch.ones(4, dtype=dtype, device="npu")
    with _expect_aclnn("aclnnIsClose", cann):
        torch.isclose(x, x)
    with _expect_aclnn("aclnnIsClose", cann):  # allclose is isclose().all() on torch_npu too
        torch.allclose(x, x)
    with pytest.raises(RuntimeError) as info:  # so torch.testing cannot compare such npu tensors
        torch.testing.assert_close(x, x)
    assert "call aclnnIsClose failed" in str(info.value.__cause__)
    torch.testing.assert_close(x.cpu(), x.cpu())  # what works: compare on the host


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64, torch.int32, torch.bool])
def test_isclose_in_supported_dtypes_matches_the_cpu(dtype):
    a = torch.tensor([0, 1, 2, 3], dtype=torch.float32).to(dtype)
    b = torch.tensor([0, 1, 5, 3], dtype=torch.float32).to(dtype)
    got = torch.isclose(a.to("npu"), b.to("npu"))
    assert got.device.type == "npu" and torch.equal(got.cpu(), torch.isclose(a, b))


def test_isclose_runs_as_one_kernel_like_torch_npus():
    # torch_npu's isclose kernel shadows torch's decomposition: the op reaches the device as itself
    assert torch._C._dispatch_has_kernel_for_dispatch_key("aten::isclose", "PrivateUse1")
    x = torch.ones(3, device="npu", requires_grad=True)
    assert not torch.isclose(x, x).requires_grad  # bool output: no autograd formula lost


def test_other_recorded_gaps():
    a = torch.ones(3, dtype=torch.int16, device="npu")
    with _expect_aclnn("aclnnAddcmul", "DT_INT16"):
        torch.addcmul(a, a, a)
    assert torch.equal(torch.addcmul(a.int(), a.int(), a.int()).cpu(), torch.full((3,), 2, dtype=torch.int32))
    with _expect_aclnn("aclnnInplaceNormal", "DT_COMPLEX32"):
        torch.empty(4, dtype=torch.complex32, device="npu").normal_()
    assert torch.empty(4, dtype=torch.complex64, device="npu").normal_().dtype == torch.complex64


def test_every_recorded_gap_names_known_dtypes_and_real_overloads():
    table = data.load_table("dtype_support.json")["aclnn_dtype_gaps"]
    assert table, "the generated table lost its dtype gaps"
    for api, entry in table.items():
        assert api.startswith("aclnn") and entry["evidence"]
        assert set(entry["dtypes"]) <= set(_dtype_support.CANN_DTYPES), api
        for overload in entry["aten"]:  # (Dimname overloads such as max.names_dim are not in torch.ops)
            name, _, ov = overload.partition(".")
            assert hasattr(torch.ops.aten, name) and (
                hasattr(getattr(torch.ops.aten, name), ov or "default") or ov.startswith("names")), overload
