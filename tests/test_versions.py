"""The one version parser: packaging for torch / torch_npu / libraries, a small key for CANN."""
from __future__ import annotations

import pytest

from ascend_compat import _versions as v


@pytest.mark.parametrize("text, release, line, base", [
    ("2.13.0+cpu", (2, 13, 0), (2, 13), "2.13.0"), ("2.5.1.post1", (2, 5, 1), (2, 5), "2.5.1"),
    ("2.1.0.rc1", (2, 1, 0), (2, 1), "2.1.0"), ("2.5", (2, 5), (2, 5), "2.5"), ("v2.6.0", (2, 6, 0), (2, 6), "2.6.0"),
    ("2", (2,), (2, 0), "2"),
])
def test_parts(text, release, line, base):
    assert (v.release(text), v.minor(text), v.base(text)) == (release, line, base)


@pytest.mark.parametrize("bad", ["latest", "", "2.x", "8.0.RC2.alpha003"])
def test_unreadable_versions_are_refused_by_name(bad):
    with pytest.raises(v.VersionError, match="cannot read a version from"):
        v.parse(bad)


def test_key_orders_pep440_and_puts_unreadable_first():
    texts = ["2.5.1.post1", "2.1.0rc1", "garbage", "2.10.0", "2.1.0", "2.5.1", "2.13.0+cpu"]
    assert sorted(texts, key=v.key) == ["garbage", "2.1.0rc1", "2.1.0", "2.5.1", "2.5.1.post1", "2.10.0", "2.13.0+cpu"]


@pytest.mark.parametrize("lo,hi", [
    ("8.0.RC1", "8.0.RC2"), ("8.0.RC3", "8.0.0"), ("8.0.0", "8.1.RC1"), ("8.3.RC1", "8.5.0"), ("8.5.0", "9.1.0"),
    ("7.0.RC1", "7.0.0"), ("2.1.0rc1", "2.1.0"), ("2.5.1", "2.5.1.post1"), ("2.5.1.post1", "2.5.1.post2"),
    ("24.1.rc2", "24.1.0"), ("8.5.0.alpha001", "8.5.0"), ("6.3.RC3", "6.3.RC3.1"), ("8.0.RC2.alpha003", "8.0.RC2"),
    ("8.0.RC2.alpha003", "8.0.RC2.beta1"), ("8.0.T5", "8.0.RC1"), ("8.0.RC9", "8.0.RC10"), ("x.y", "1.0"),
])
def test_cann_order(lo, hi):
    assert v.cann_key(lo) < v.cann_key(hi)


def test_cann_equal_forms():
    assert v.cann_key("8.5") == v.cann_key("8.5.0") == v.cann_key("8.5.0.0") == v.cann_key("8.5.0+simulated")
    assert v.cann_key("8.0.RC2") == v.cann_key("8.0.rc2")


@pytest.mark.parametrize("spec, version, holds", [
    (">=2.5,<3", "2.13.0+cpu", True), (">=2.5", "2.1.0", False), ("==2.13.*", "2.13.1", True),
    ("", "0.1", True), (">=2.13", "2.14.0.dev20261101", True), (">=2.14", "2.14.0.dev20261101", False), ("<2.6", "2.5.1.post1", True),
])
def test_contains(spec, version, holds):
    assert v.contains(spec, version) is holds


def test_bad_specifier_is_named():
    with pytest.raises(v.VersionError, match="bad version specifier '~2'"):
        v.specifier("~2")


def test_requirement_holds():
    have = {"torch": "2.13.0+cpu", "torch_npu": None, "lib": "0.22.1"}
    assert v.requirement_holds("torch>=2.5,<3; lib>=0.22", have)
    assert not v.requirement_holds("torch_npu>=2.1", have)  # not installed: the clause does not hold
    with pytest.raises(v.VersionError):
        v.requirement_holds(">=2", have)


@pytest.mark.parametrize("line, pin", [
    ("torch==2.5.1.*", "2.5.1"), ("torch ==2.6.0", "2.6.0"), ("torch==2.6.0; python_version >= '3.9'", "2.6.0"),
    ("torch>=2.1", None), ("numpy==1.26", None), ("torch==2.1,<3", None), ("not a requirement ==", None),
])
def test_pinned(line, pin):
    assert v.pinned(line, "torch") == pin
