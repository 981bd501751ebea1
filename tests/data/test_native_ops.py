"""The generated op-coverage table and its loaders (ascend_compat.data.native_ops & co)."""
from __future__ import annotations

import pytest

from ascend_compat import data


def test_versions_cover_2_1_to_2_14_in_order():
    versions = data.native_op_versions()
    assert versions[0] == "2.1"
    assert versions[-1] == "2.14"
    assert list(versions) == sorted(versions, key=lambda v: tuple(map(int, v.split("."))))
    for minor in range(1, 15):
        assert f"2.{minor}" in versions


@pytest.mark.parametrize("version", data.native_op_versions())
def test_basic_ops_native_in_every_version(version):
    ops = data.native_ops(version)
    for op in ("add.Tensor", "add.out", "add_.Tensor", "mm", "relu", "_softmax", "addmm", "copy_", "view", "empty.memory_format"):
        assert op in ops, (version, op)
    # ~1,070-1,110 overloads per version (2.14.0 wheel: 1,080 `supported` lines, minus 2 npu-namespace
    # framework ops and 1 sparse-only entry)
    assert 1000 < len(ops) < 1200, len(ops)


def test_2_14_count_matches_wheel():
    assert len(data.native_ops("2.14")) == 1077
    assert len(data.custom_op_overloads("2.14")) == 419


@pytest.mark.parametrize("op", ["fmax.out", "mode", "poisson", "cholesky", "nonzero_static", "histogram.bin_ct"])
def test_known_cpu_fallback_ops_absent_everywhere(op):
    for version in data.native_op_versions():
        assert op not in data.native_ops(version), (version, op)


def test_to_copy_native_only_in_some_versions():
    # torch_npu 2.2-2.5 left _to_copy to torch's CompositeExplicitAutograd kernel
    assert "_to_copy" in data.native_ops("2.14")
    assert "_to_copy" not in data.native_ops("2.5")


def test_overloads_are_separate():
    # listing gelu.out does not make the functional gelu native (2.7+ registers only the out variant)
    ops = data.native_ops("2.14")
    assert "gelu.out" in ops and "gelu" not in ops
    assert "gelu" in data.native_ops("2.5") and "gelu.out" not in data.native_ops("2.5")


def test_names_are_normalised():
    for versions_ops in (data.native_ops(v) for v in data.native_op_versions()):
        assert not any(op.endswith(".default") or "::" in op or "(" in op for op in versions_ops)
    assert data.normalize_op_name("aten::relu.default") == "relu"
    assert data.normalize_op_name("aten::add.Tensor") == "add.Tensor"
    assert data.normalize_op_name("aten.add.Tensor") == "add.Tensor"
    assert data.normalize_op_name("relu.default") == "relu"
    assert data.is_native("aten::relu.default")
    assert not data.is_native("aten::fmax.out")


def test_custom_ops():
    ops = data.custom_ops("2.14")
    assert {"npu_fusion_attention", "npu_rms_norm", "npu_rotary_mul", "npu_swiglu"} <= ops
    assert "npu_format_cast.Tensor" in data.custom_op_overloads("2.14")
    assert "npu_format_cast" in ops
    assert "npu_fusion_attention" in data.exposed_custom_ops("2.14")
    # custom ops are never counted as aten overloads
    assert not ({"copy_memory_", "empty_with_format"} & data.native_ops("2.14"))
    # npu_mhc_pre arrived in 2.7 (the 2.1 line's last wheel, 2.1.0.post17, does not have it)
    assert "npu_mhc_pre" not in data.custom_ops("2.1")
    assert "npu_mhc_pre" in data.custom_ops("2.7")


@pytest.mark.parametrize("given, key", [
    ("2.5.1", "2.5"), ("2.5.1.post1", "2.5"), ("2.10.0.post7", "2.10"), ("2.13.0+cpu", "2.13"),
    ("2.14.1", "2.14"), ("2.13.0a0+git1234", "2.13"), ("v2.3", "2.3"), ("2.1.0.post17", "2.1"),
    (None, "2.14"),
    ("2.15.0", "2.14"), ("3.0", "2.14"),  # newer than the data: newest table
])
def test_resolve_version(given, key):
    assert data.resolve_version(given) == key


@pytest.mark.parametrize("bad", ["2.0.1", "1.11.0.post14"])
def test_resolve_version_too_old_says_what_exists(bad):
    with pytest.raises(ValueError, match=r"older than .*2\.1"):
        data.resolve_version(bad)


@pytest.mark.parametrize("bad", ["", "latest", "two.five"])
def test_resolve_version_garbage(bad):
    with pytest.raises(ValueError, match="cannot read a version"):
        data.resolve_version(bad)


def test_native_ops_cached_and_frozen():
    a = data.native_ops("2.5.1")
    assert a is data.native_ops("2.5")
    assert isinstance(a, frozenset)


def test_would_fall_back_uses_real_dispatcher():
    torch = pytest.importorskip("torch")
    assert data.would_fall_back("fmax.out")  # CPU-only kernel, not in torch_npu
    assert not data.would_fall_back("add.Tensor")  # native
    assert not data.would_fall_back("gelu", "2.14")  # structured: composite kernel redispatches to gelu.out
    assert not data.would_fall_back("dropout")  # CompositeImplicitAutograd
    with pytest.raises(ValueError, match="no operator"):
        data.would_fall_back("no_such_op_xyz")
    assert torch is not None
