"""``ASCEND_COMPAT_DISABLE``: leaving chosen ecosystem integrations out of the shim's activation."""
from __future__ import annotations

from _dropin_subproc import ok, run

_PROBE = """
    import ascend_compat
    from ascend_compat.cuda_shim import registry
    from ascend_compat.ecosystem.dropins import _finder as _modules
    from ascend_compat.ecosystem.integrations import accelerate_patch, deepspeed_patch, lightning, transformers_patch
    live = set(map(id, registry.applied() + registry.pending()))
    for name, module in (("transformers", transformers_patch), ("accelerate", accelerate_patch),
                         ("deepspeed", deepspeed_patch), ("lightning", lightning)):
        print("LIB", name, all(id(p) in live for p in module.patches()))
    print("DROPINS", _modules.installed())
"""


def test_nothing_disabled_applies_everything():
    out = ok(run(_PROBE, ASCEND_COMPAT_SIMULATE="1"))
    for name in ("transformers", "accelerate", "deepspeed", "lightning"):
        assert f"LIB {name} True" in out, out
    assert "DROPINS ['apex', 'bitsandbytes', 'flash_attn', 'xformers']" in out


def test_named_integrations_are_left_out():
    out = ok(run(_PROBE, ASCEND_COMPAT_SIMULATE="1", ASCEND_COMPAT_DISABLE=" flash-attn, Lightning,accelerate"))
    assert "LIB lightning False" in out and "LIB accelerate False" in out, out
    assert "LIB transformers True" in out and "LIB deepspeed True" in out, out
    assert "DROPINS ['apex', 'bitsandbytes', 'xformers']" in out


def test_all_leaves_every_integration_out():
    out = ok(run(_PROBE, ASCEND_COMPAT_SIMULATE="1", ASCEND_COMPAT_DISABLE="all"))
    for name in ("transformers", "accelerate", "deepspeed", "lightning"):
        assert f"LIB {name} False" in out, out
    assert "DROPINS []" in out


def test_unknown_name_warns_and_the_program_runs():
    proc = run(_PROBE, ASCEND_COMPAT_SIMULATE="1", ASCEND_COMPAT_DISABLE="flash_atn,apex")
    assert proc.returncode == 0, proc.stderr
    assert "DROPINS ['bitsandbytes', 'flash_attn', 'xformers']" in proc.stdout  # the valid name still applies
    assert "ASCEND_COMPAT_DISABLE" in proc.stderr and "flash_atn" in proc.stderr and "flash_attn" in proc.stderr
