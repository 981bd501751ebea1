"""The patch registry: apply/revert by identity, stale-binding rebinding, versions, deferral."""
from __future__ import annotations

import sys
import types

import pytest

from ascend_compat.cuda_shim import registry
from ascend_compat.cuda_shim.registry import Patch, version_matches


@pytest.fixture
def fake_modules():
    """Two real modules in sys.modules: a 'home' defining objects, a 'user' that copied one."""
    home = types.ModuleType("acs_test_home")

    def original(x):
        return ("original", x)

    class Klass:
        def method(self):
            return "method"

        @staticmethod
        def static():
            return "static"

        @classmethod
        def klass(cls):
            return cls.__name__

    class Child(Klass):
        pass

    home.func, home.Klass, home.Child = original, Klass, Child
    user = types.ModuleType("acs_test_user")
    user.func = original  # `from acs_test_home import func`
    sys.modules.update(acs_test_home=home, acs_test_user=user)
    registry.revert_all()
    yield home, user
    registry.revert_all()
    for name in ("acs_test_home", "acs_test_user", "acs_test_late"):
        sys.modules.pop(name, None)


def test_apply_rebinds_stale_references_and_revert_restores_identity(fake_modules):
    home, user = fake_modules
    original = home.func
    p = Patch("acs_test_home:func", lambda f: (lambda x: ("patched", f(x))), "test", wrap=True)
    assert registry.apply_all([p]) == 1
    assert home.func(1) == ("patched", ("original", 1))
    assert user.func is home.func  # the stale copy was rebound
    registry.revert_all()
    assert home.func is original and user.func is original


def test_module_imported_while_active_is_restored_too(fake_modules):
    home, _ = fake_modules
    original = home.func
    registry.apply_all([Patch("acs_test_home:func", lambda x: "new", "test")])
    late = types.ModuleType("acs_test_late")
    late.func = home.func  # imported while the patch was active
    sys.modules["acs_test_late"] = late
    registry.revert_all()
    assert late.func is original


def test_inherited_attribute_is_deleted_not_shadowed(fake_modules):
    home, _ = fake_modules
    assert "method" not in home.Child.__dict__
    registry.apply_all([Patch("acs_test_home:Child.method", lambda self: "child", "test", rebind=False)])
    assert home.Child().method() == "child"
    registry.revert_all()
    assert "method" not in home.Child.__dict__ and home.Child().method() == "method"


def test_static_and_class_methods_keep_their_kind(fake_modules):
    home, _ = fake_modules
    raw_static, raw_class = home.Klass.__dict__["static"], home.Klass.__dict__["klass"]
    wrap = lambda f: (lambda *a: ("w", f(*a)))  # noqa: E731
    registry.apply_all([
        Patch("acs_test_home:Klass.static", wrap, "t", wrap=True, rebind=False),
        Patch("acs_test_home:Klass.klass", wrap, "t", wrap=True, rebind=False),
    ])
    assert home.Klass.static() == ("w", "static") and home.Klass().static() == ("w", "static")
    assert home.Child.klass() == ("w", "Child")
    registry.revert_all()
    assert home.Klass.__dict__["static"] is raw_static and home.Klass.__dict__["klass"] is raw_class


def test_missing_target_raises_unless_optional(fake_modules):
    with pytest.raises(AttributeError, match="acs_test_home:nope"):
        registry.apply_all([Patch("acs_test_home:nope", lambda f: f, "t", wrap=True)])
    assert registry.apply_all([Patch("acs_test_home:nope", lambda f: f, "t", wrap=True, optional=True)]) == 0
    assert ("acs_test_home:nope", "target not present") in registry.skipped()


def test_failure_midway_reverts_everything(fake_modules):
    home, _ = fake_modules
    original = home.func

    def boom(_):
        raise RuntimeError("broken patch")

    with pytest.raises(RuntimeError, match="broken patch"):
        registry.apply_all([Patch("acs_test_home:func", lambda x: x, "t"),
                            Patch("acs_test_home:Klass.method", boom, "t", wrap=True)])
    assert home.func is original and not registry.applied()


def test_version_gates():
    v = {"torch": "2.13.0+cpu", "torch_npu": None, "lib": "0.22.1"}
    assert version_matches("torch>=2.5", v)
    assert version_matches("torch>=2.5,<3; lib>=0.22", v)
    assert not version_matches("torch<2.5", v)
    assert not version_matches("torch_npu>=2.1", v)  # unknown version: not applicable
    assert version_matches("torch==2.13", v) and not version_matches("torch!=2.13", v)
    with pytest.raises(ValueError, match="bad version specifier"):
        version_matches("torch~2", v)


def test_version_gated_patch_is_skipped(fake_modules):
    home, _ = fake_modules
    original = home.func
    registry.apply_all([Patch("acs_test_home:func", None, "t", applies_to="torch<1.0")])
    assert home.func is original
    assert registry.skipped()[0][1].startswith("not for these versions")


def test_deferred_patch_waits_for_the_import(fake_modules, tmp_path, monkeypatch):
    (tmp_path / "acs_test_late.py").write_text("def probe():\n    return 'real'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    p = Patch("acs_test_late:probe", lambda f: (lambda: "patched:" + f()), "t", wrap=True, defer=True)
    registry.apply_all([p])
    assert "acs_test_late" not in sys.modules  # nothing imported on its behalf
    import acs_test_late

    assert acs_test_late.probe() == "patched:real"
    registry.revert_all()
    assert acs_test_late.probe() == "real"


def test_counters_and_debug_log_once_per_call_site(caplog):
    import logging

    registry.reset_counters()
    logger = logging.getLogger("ascend_compat.cuda_shim")
    with caplog.at_level(logging.DEBUG, logger="ascend_compat"):
        old = logger.level
        logger.setLevel(logging.DEBUG)
        registry.refresh_debug()
        try:
            for _ in range(3):
                registry.hit("demo", "detail")  # one call site
            registry.hit("demo")  # another
        finally:
            logger.setLevel(old)
            registry.refresh_debug()
    assert registry.counters()["demo"] == 4
    assert len([r for r in caplog.records if "demo" in r.getMessage()]) == 2
