"""What CUDA-style checks see while the shim is active (the documented decisions).

* ``torch.device("cuda...")`` is the real npu device; isinstance and C++ APIs accept it;
* ``t.is_cuda`` is True for npu tensors;
* ``x.device == torch.device("cuda:0")`` is True for a tensor on npu:0 (both sides are npu:0),
  and ``== torch.device("cuda")`` is False exactly as on CUDA (index None vs 0);
* ``t.device.type`` is ``"npu"`` and ``str(t.device)`` is ``"npu:0"``: honest, not faked;
* pickling keeps the ``torch.device`` global, so files load anywhere.
"""
from __future__ import annotations

import copy
import pickle
import pickletools

import pytest
import torch

pytestmark = pytest.mark.usefixtures("shim")


def test_torch_device_cuda_is_a_real_npu_device():
    d = torch.device("cuda:0")
    assert d.type == "npu" and d.index == 0
    assert isinstance(d, torch.device)
    assert torch.device("cuda", 1) == torch.device("npu:1")
    assert torch.device(type="cuda", index=0).type == "npu"
    assert torch.device("cuda").index is None
    assert torch.device("cpu").type == "cpu" and torch.device("meta").type == "meta"
    assert issubclass(type(d), torch.device)


def test_cxx_apis_accept_the_translated_device():
    d = torch.device("cuda:0")
    t = torch.empty(2, device=d)
    assert t.device == d
    assert torch.zeros(1).to(d).device == d
    assert torch.empty(1, device=torch.device("cuda")).device.type == "npu"


def test_user_checks():
    x = torch.ones(2, device="cuda")
    assert x.is_cuda
    assert not torch.ones(2).is_cuda
    assert x.device == torch.device("cuda:0")
    assert x.device != torch.device("cuda")  # same as on CUDA: an index-less device is not cuda:0
    assert x.device.type == "npu"
    assert str(x.device) == "npu:0"
    assert "cuda" not in str(x.device)


def test_module_level_device_constant_still_works():
    DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # noqa: N806
    model = torch.nn.Linear(2, 2).to(DEVICE)
    assert next(model.parameters()).device.type == "npu"
    assert model(torch.ones(1, 2, device=DEVICE)).device.type == "npu"


def test_device_pickles_as_torch_device_global():
    data = pickle.dumps(torch.device("cuda:1"))
    ops = [(op.name, arg) for op, arg, _ in pickletools.genops(data)]
    # written as the global torch.device (module "torch", name "device"): loads without ascend-compat
    assert ("SHORT_BINUNICODE", "torch") in ops and ("SHORT_BINUNICODE", "device") in ops
    assert ("STACK_GLOBAL", None) in ops
    assert pickle.loads(data) == torch.device("npu:1")
    assert copy.deepcopy(torch.device("cuda:1")) == torch.device("npu:1")


def test_torch_save_load_of_objects_with_devices(tmp_path):
    path = tmp_path / "obj.pt"
    torch.save({"dev": torch.device("cuda:0"), "t": torch.ones(2, device="cuda")}, path)
    loaded = torch.load(path)
    assert loaded["dev"] == torch.device("npu:0") and loaded["t"].device.type == "npu"
