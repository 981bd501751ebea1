"""The one device translation function: only device-shaped values change."""
from __future__ import annotations

import pytest
import torch

from ascend_compat.cuda_shim import devices
from ascend_compat.cuda_shim.devices import translate, translate_backend


@pytest.fixture(autouse=True)
def _target():
    devices.set_target("npu")


@pytest.mark.parametrize("value, expected", [
    ("cuda", "npu"), ("cuda:0", "npu:0"), ("cuda:13", "npu:13"),
    ("cpu", "cpu"), ("npu:1", "npu:1"), ("meta", "meta"),
])
def test_device_strings(value, expected):
    assert translate(value) == expected


@pytest.mark.parametrize("value", [
    "ckpt_cuda.pt", "cuda_version", "CUDA", "cuda:", "cuda:x", "cuda:-1", " cuda", "cuda:0 ", "my cuda",
    "cuda:１",  # non-ASCII digit
])
def test_arbitrary_strings_are_never_rewritten(value):
    assert translate(value) is value


def test_torch_device_objects():
    out = translate(torch.device("cuda", 3))
    assert out == torch.device("npu", 3) and type(out) is type(torch.device("cpu"))
    assert translate(torch.device("cuda")).index is None
    cpu = torch.device("cpu")
    assert translate(cpu) is cpu


def test_ints_only_where_the_api_takes_a_device():
    assert translate(1) == 1
    assert translate(1, ints=True) == "npu:1"
    assert translate(True, ints=True) is True  # bool is not a device ordinal


def test_containers_translate_elements_and_keep_identity_when_unchanged():
    assert translate(["cuda:0", 1, torch.device("cuda:1")]) == ["npu:0", 1, torch.device("npu:1")]
    assert translate(("cuda:0",)) == ("npu:0",)
    same = [0, 1]
    assert translate(same) is same
    mapping = {"cuda:1": "cuda:0", "cuda_version": "cpu"}
    assert translate(mapping) == {"cuda:1": "npu:0", "cuda_version": "cpu"}  # keys are saved locations


@pytest.mark.parametrize("value, expected", [
    ("nccl", "hccl"), ("NCCL", "hccl"), ("cuda:nccl", "npu:hccl"), ("cpu:gloo,cuda:nccl", "cpu:gloo,npu:hccl"),
    ("gloo", "gloo"), ("cpu:gloo", "cpu:gloo"), (None, None),
])
def test_backend_strings(value, expected):
    assert translate_backend(value) == expected
