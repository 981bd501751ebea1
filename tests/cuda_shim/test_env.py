"""Environment translation (pure functions + the reversible change on a private dict)."""
from __future__ import annotations

import pytest

from ascend_compat.cuda_shim.patches.env import (EnvTranslation, EnvValueError, translate_alloc_conf,
                                                 translate_visible_devices)


@pytest.mark.parametrize("value, expected, reordered", [
    ("0", "0", False), ("0,1,2", "0,1,2", False), ("3,1", "1,3", True), (" 2 , 5 ", "2,5", False), ("", "", False),
])
def test_visible_devices(value, expected, reordered):
    out, note = translate_visible_devices(value)
    assert out == expected and (note is not None) == reordered


@pytest.mark.parametrize("value, why", [
    ("GPU-8f3a1c2e", "UUID"), ("0,-1", "negative"), ("0,0", "twice"), ("MIG-1", "MIG"), ("a,b", "numbers"),
])
def test_visible_devices_invalid_values_explain(value, why):
    with pytest.raises(EnvValueError, match="ASCEND_RT_VISIBLE_DEVICES"):
        translate_visible_devices(value)


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


def test_invalid_visible_devices_is_left_alone_with_a_warning():
    env = {"CUDA_VISIBLE_DEVICES": "GPU-1234"}
    with pytest.warns(RuntimeWarning, match="GPU UUIDs"):
        EnvTranslation(env).apply()
    assert "ASCEND_RT_VISIBLE_DEVICES" not in env
