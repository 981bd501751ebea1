"""The rule registry: each rule is one module, found by discovery; the prefilter comes from the rules."""
from __future__ import annotations

import ast
import pkgutil
import types

from ascend_compat.analysis import rules, scan
from ascend_compat.analysis.rules import registry
from ascend_compat.analysis.rules.base import AUTO, Rule
from ascend_compat.analysis.rules.catalog import RULES
from ascend_compat.analysis.visitor import PyAnalyzer


def _findings(code: str, reg=None):
    an = PyAnalyzer("x.py", code, registry=reg)
    an.feed(ast.parse(code))
    return an.finish()


def test_every_module_of_the_package_is_a_rule_or_a_listed_helper():
    names = {m.name for m in pkgutil.iter_modules(rules.__path__)}
    mods = registry.discover()
    assert {m.__name__.rsplit(".", 1)[1] for m in mods} == names - registry.SUPPORT_MODULES
    assert [m.RULE.id for m in sorted(mods, key=lambda m: m.RULE.order)] == list(RULES)
    for m in mods:  # module name = rule id
        assert m.__name__.rsplit(".", 1)[1] == m.RULE.id.replace("-", "_")


def test_prefilter_words_are_the_rules_triggers():
    reg = registry.default()
    words = {w for m in registry.discover() for w in getattr(m, "TRIGGERS", ())}
    assert set(scan.KEYWORDS) <= words
    for w in words:  # a word left out is covered by a shorter word inside it
        assert any(k in w for k in scan.KEYWORDS), w
    assert reg.trigger_patterns and scan._EXTRA == reg.trigger_patterns


def test_a_new_rule_is_one_module():
    """A module object with RULE, TRIGGERS and a hook is all a rule needs."""
    mod = types.ModuleType("frobnicate_rule")
    mod.RULE = Rule("frobnicate", "api", AUTO, "frobnicate() call", "why", "use npu_frobnicate", order=99)
    mod.TRIGGERS = ("frobnicate",)

    def on_call(v, node, q, attr):
        if q == "torch.frobnicate":
            v.report(node, mod.RULE.id, "torch.frobnicate")

    mod.on_call = on_call
    reg = registry.Registry(registry.discover() + [mod])
    code = "import torch as t\nt.frobnicate(1)\n"
    assert [f.rule for f in _findings(code, reg)] == ["frobnicate"]
    assert "frobnicate" in reg.triggers
    assert _findings(code) == []  # the default registry does not know it


def test_a_rule_removed_is_no_longer_detected():
    """Detection lives in the rule modules, not in the engine."""
    code = "import torch\nx = torch.ones(2).double()\ny = torch.ones(2).cuda()\n"
    assert {f.rule for f in _findings(code)} == {"float64", "cuda-method"}
    without = registry.Registry([m for m in registry.discover() if m.RULE.id != "float64"])
    assert {f.rule for f in _findings(code, without)} == {"cuda-method"}


def test_registry_refuses_duplicate_ids():
    mod = types.ModuleType("dup")
    mod.RULE = RULES["float64"]
    try:
        registry.Registry(registry.discover() + [mod])
    except ValueError as exc:
        assert "float64" in str(exc)
    else:
        raise AssertionError("duplicate rule id accepted")


def test_rewritable_rules_are_those_with_a_rewrite():
    reg = registry.default()
    assert "cuda-method" in reg.rewritable and "float64" not in reg.rewritable
    assert reg.rewrite_string["nccl-backend"]("nccl") == "hccl"
    assert reg.rewrite_string["device-string"]("cuda:1") == "npu:1"
