"""PYTORCH_NPU_ALLOC_CONF parsed as torch_npu parses it, per version era."""
from __future__ import annotations

import pytest

from ascend_compat.knowledge.alloc_conf import ALL_KEYS, AllocConfError, era, from_env, parse

MiB = 1 << 20


def test_defaults_and_values():
    c = parse(None)
    assert not c.split_limited and c.expandable_segments is False and c.large_segment_size == 20 * MiB
    c = parse("max_split_size_mb:128, garbage_collection_threshold:0.6")
    assert c.max_split_size == 128 * MiB and c.garbage_collection_threshold == 0.6
    assert parse("expandable_segments:True").expandable_segments
    assert parse("roundup_power2_divisions:[256:1,512:2,>:8]").roundup_power2_divisions == (
        (1,) * 9 + (2,) + (8,) * 6)


@pytest.mark.parametrize("text, message", [
    ("max_split_size_mb:10", "must be >= 20"),
    ("expandable_segments:yes", "True/False"),
    ("garbage_collection_threshold:1.5", "(0.0, 1.0)"),
    ("bogus:1", "Unrecognized key 'bogus'"),
    ("pinned_num_register_threads:8", "torch_npu not support key"),
    ("roundup_power2_divisions:3", "power of 2 or 0"),
    ("max_split_size_mb:64,expandable_segments:True", "cannot be enabled with"),
    ("max_split_size_mb", "expected :"),
])
def test_errors_carry_torch_npu_messages(text, message):
    with pytest.raises(AllocConfError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(text)


def test_eras():
    assert era("2.6.0") == "old" and era("2.9.0") == "2.9" and era("2.12.0") == "2.10" and era(None) == "2.10"
    with pytest.raises(AllocConfError, match="Unrecognized CachingAllocator option: roundup_power2_divisions"):
        parse("roundup_power2_divisions:4", "2.6.0")
    with pytest.raises(AllocConfError, match="must be > 20"):
        parse("max_split_size_mb:20", "2.6.0")
    assert parse("max_split_size_mb:20").max_split_size == 20 * MiB
    assert parse("segment_size_mb:64", "2.9.0").large_segment_size == 64 * MiB


def test_environment_and_shim_keys():
    assert from_env(environ={"PYTORCH_ALLOC_CONF": "expandable_segments:True"}).expandable_segments
    with pytest.raises(AllocConfError, match="Both PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF"):
        from_env(environ={"PYTORCH_ALLOC_CONF": "", "PYTORCH_NPU_ALLOC_CONF": ""})
    assert {"expandable_segments", "max_split_size_mb", "roundup_power2_divisions"} <= ALL_KEYS
