"""Environment translation (pure functions + the reversible change on a private dict)."""
from __future__ import annotations

import pytest

from ascend_compat.cuda_shim.patches.env import EnvTranslation, translate_alloc_conf, translate_visible_devices


@pytest.mark.parametrize("value, expected, reordered", [
    ("0", "0", False), ("0,1,2", "0,1,2", False), ("3,1", "1,3", True), (" 2 , 5 ", "2,5", False), ("", "", False),
    ("0, 1", "0,1", False),
])
def test_visible_devices(value, expected, reordered):
    out, note = translate_visible_devices(value)
    assert out == expected and (note is not None) == reordered


@pytest.mark.parametrize("value, expected, note", [
    ("-1", "", None),                 # CUDA's "no GPU": no NPU either (was: every NPU stayed visible)
    ("0,-1,1", "0", None),            # an invalid id hides the devices from there on, as CUDA does
    ("a,b", "", None), ("1gpu2,2ampere", "1,2", None),   # read like strtoul, as CUDA does
    ("0,0", "", "twice"),             # a repeated id: CUDA shows no device
    ("GPU-8f3a1c2e", "", "UUID"), ("MIG-1", "", "UUID"),  # no NPU has a GPU's UUID
])
def test_visible_devices_follow_cuda(value, expected, note):
    out, said = translate_visible_devices(value)
    assert out == expected
    assert (said is None) if note is None else (note in said and "ASCEND_RT_VISIBLE_DEVICES" in said)


@pytest.mark.parametrize("value", ["", "-1", "0", "3,1", "0,-1,1", " 2 , 5 ", "0,0", "a,b", "1gpu2,2ampere", "+1,2",
                                   "0, 1", "2,2,3", "GPU-1,GPU-2", "GPU-1,GPU-1", "MIG-a,0", "7,x,8"])
def test_cuda_parser_agrees_with_torchs_own(value, monkeypatch):
    """The knowledge layer's CUDA_VISIBLE_DEVICES parser reads every value as torch.cuda does."""
    import torch

    from ascend_compat.knowledge import visible_devices

    if torch.version.hip:
        pytest.skip("ROCm builds read HIP_VISIBLE_DEVICES")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    assert visible_devices.cuda_ids(value) == torch.cuda._parse_visible_devices()


def test_alloc_conf_keeps_known_keys():
    # roundup_power2_divisions: torch_npu 2.9 on; backend: CUDA's allocator choice, unknown to torch_npu
    conf, dropped = translate_alloc_conf("max_split_size_mb:128,roundup_power2_divisions:4,backend:cudaMallocAsync,"
                                         "expandable_segments:True")
    assert conf == "max_split_size_mb:128,roundup_power2_divisions:4,expandable_segments:True"
    assert dropped == ["backend"]


def test_env_change_applies_and_reverts_exactly():
    env = {"CUDA_VISIBLE_DEVICES": "1,0", "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64",
           "NCCL_SOCKET_IFNAME": "eth0", "NCCL_BUFFSIZE": "8388608", "NCCL_DEBUG": "INFO",
           "HCCL_ASYNC_ERROR_HANDLING": "0", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}
    original = dict(env)
    change = EnvTranslation(env)
    with pytest.warns(RuntimeWarning, match="not ascending"):
        change.apply()
    assert env["ASCEND_RT_VISIBLE_DEVICES"] == "0,1"
    assert env["PYTORCH_NPU_ALLOC_CONF"] == "max_split_size_mb:64"
    assert env["HCCL_SOCKET_IFNAME"] == "eth0" and env["HCCL_BUFFSIZE"] == "8"
    assert env["HCCL_ASYNC_ERROR_HANDLING"] == "0"  # an Ascend variable already set wins
    assert any("NCCL_DEBUG" in n for n in change.notes)
    change.revert()
    assert env == original


def test_uuids_hide_every_npu_with_a_warning():
    env = {"CUDA_VISIBLE_DEVICES": "GPU-1234"}
    with pytest.warns(RuntimeWarning, match="UUID"):
        EnvTranslation(env).apply()
    assert env["ASCEND_RT_VISIBLE_DEVICES"] == ""
