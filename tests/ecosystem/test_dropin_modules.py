"""The virtual-module finder: ``import flash_attn`` / ``apex`` / ``xformers`` / ``bitsandbytes`` resolve to
ascend-compat's implementations only while installed and only when the real package is absent."""
from __future__ import annotations

import pytest

from _dropin_subproc import ok, run


def test_not_importable_without_activation():
    out = ok(run("""
        import importlib.util
        import ascend_compat
        for name in ("flash_attn", "apex", "xformers", "bitsandbytes"):
            print(name, importlib.util.find_spec(name))
    """, ASCEND_COMPAT_NO_PATCH="1"))
    for name in ("flash_attn", "apex", "xformers", "bitsandbytes"):
        assert f"{name} None" in out, "the real packages must not be installed in the test venv"


def test_imports_metadata_and_clear_errors_when_installed():
    """An explicit install() (the shim's own is disabled here, so this call is the one that enables them)."""
    out = ok(run("""
        import importlib.metadata as md, importlib.util, sys
        import ascend_compat
        from ascend_compat.ecosystem.dropins import _finder as _modules
        print("ENABLED", sorted(_modules.install()))
        import flash_attn, ascend_compat.ecosystem.dropins.flash_attn as impl
        from flash_attn import flash_attn_func, flash_attn_varlen_func, flash_attn_with_kvcache
        from flash_attn.bert_padding import unpad_input, pad_input, index_first_axis
        from flash_attn.flash_attn_interface import flash_attn_qkvpacked_func
        assert flash_attn_func is impl.flash_attn_func and flash_attn.__ascend_compat_dropin__
        print("VERSIONS", flash_attn.__version__, md.version("flash_attn"), md.version("flash-attn"))
        print("SUMMARY", md.metadata("flash_attn")["Summary"])
        assert importlib.util.find_spec("flash_attn") is not None
        from flash_attn.layers.rotary import RotaryEmbedding, apply_rotary_emb
        from flash_attn.ops.triton.rotary import apply_rotary
        print("ROTARY", apply_rotary is sys.modules["flash_attn.layers.rotary"].apply_rotary)
        try:
            import flash_attn.ops.triton.layer_norm
        except ModuleNotFoundError as e:
            print("MISSING", e.name, "|", e)
        import apex
        from apex import amp
        from apex.optimizers import FusedAdam, FusedLAMB
        from apex.parallel import DistributedDataParallel, SyncBatchNorm, convert_syncbn_model
        from apex.normalization import FusedLayerNorm, FusedRMSNorm
        print("APEX", md.version("apex"), callable(amp.initialize), apex.amp is sys.modules["apex.amp"])
        import xformers.ops as xops
        from xformers.ops import fmha, memory_efficient_attention, LowerTriangularMask
        from xformers.ops.fmha.attn_bias import BlockDiagonalMask
        print("XFORMERS", md.version("xformers"), fmha.attn_bias.LowerTriangularMask is LowerTriangularMask)
        import bitsandbytes as bnb
        from bitsandbytes.optim import AdamW8bit
        try:
            md.version("bitsandbytes")
        except md.PackageNotFoundError:
            print("BNB no metadata", bnb.optim.AdamW8bit is AdamW8bit)
    """, ASCEND_COMPAT_SIMULATE="1", ASCEND_COMPAT_DISABLE="flash_attn,apex,xformers,bitsandbytes"))
    assert "ENABLED ['apex', 'bitsandbytes', 'flash_attn', 'xformers']" in out
    assert "VERSIONS 2.7.4 2.7.4 2.7.4" in out
    assert "SUMMARY ascend-compat drop-in emulating flash_attn 2.7.4" in out
    assert "ROTARY True" in out
    assert "MISSING flash_attn.ops.triton.layer_norm | " in out and "npu_rms_norm" in out
    assert "APEX 0.1 True True" in out
    assert "XFORMERS 0.0.29 True" in out
    assert "BNB no metadata True" in out


def test_uninstall_and_registry_revert_remove_everything():
    out = ok(run("""
        import importlib.util, sys
        import ascend_compat
        from ascend_compat.cuda_shim import registry
        from ascend_compat.ecosystem.dropins import _finder as _modules
        registry.apply_all(_modules.changes())
        import flash_attn, apex.amp
        print("BEFORE", _modules.installed(), "flash_attn" in sys.modules)
        registry.revert_all()
        print("AFTER", _modules.installed(), "flash_attn" in sys.modules, "apex.amp" in sys.modules,
              importlib.util.find_spec("flash_attn"))
        import ascend_compat.ecosystem.dropins.flash_attn  # the implementation stays importable directly
        print("DIRECT ok")
    """, ASCEND_COMPAT_SIMULATE="1"))
    assert "BEFORE ['apex', 'bitsandbytes', 'flash_attn', 'xformers'] True" in out
    assert "AFTER [] False False None" in out and "DIRECT ok" in out


@pytest.mark.parametrize("by", ["shim", "explicit_install"])
def test_real_package_wins(tmp_path, by):
    """Whether the shim's activation or an explicit install() enables the drop-ins, a real
    installed flash_attn is left alone."""
    real = tmp_path / "flash_attn"
    real.mkdir()
    (real / "__init__.py").write_text("REAL = True\n__version__ = '9.9.9'\n")
    extra = {"ASCEND_COMPAT_DISABLE": "all"} if by == "explicit_install" else {}
    out = ok(run("""
        import ascend_compat
        from ascend_compat.ecosystem.dropins import _finder as _modules
        print("ENABLED", sorted(_modules.install()), "INSTALLED", _modules.installed())
        import flash_attn
        print("REAL", getattr(flash_attn, "REAL", False))
    """, ASCEND_COMPAT_SIMULATE="1", PYTHONPATH=str(tmp_path), **extra))
    enabled_now = "['apex', 'bitsandbytes', 'xformers']" if by == "explicit_install" else "[]"
    assert f"ENABLED {enabled_now} INSTALLED ['apex', 'bitsandbytes', 'xformers']" in out, out
    assert "REAL True" in out


def test_shim_activation_installs_the_dropins():
    out = ok(run("""
        import ascend_compat
        from ascend_compat.ecosystem.dropins import _finder as _modules
        print("INSTALLED", _modules.installed())
        print("AGAIN", _modules.install())  # an explicit install() after activation changes nothing
        import importlib.util
        print("SPEC", importlib.util.find_spec("flash_attn") is not None)
        ascend_compat.deactivate()
        print("AFTER", _modules.installed(), importlib.util.find_spec("flash_attn"))
    """, ASCEND_COMPAT_SIMULATE="1"))
    assert "INSTALLED ['apex', 'bitsandbytes', 'flash_attn', 'xformers']" in out
    assert "AGAIN []" in out and "SPEC True" in out and "AFTER [] None" in out


def test_flash_attn_module_imports_without_the_shim():
    ok(run("""
        from ascend_compat.ecosystem.dropins import flash_attn
        from ascend_compat.ecosystem.dropins.flash_attn import bert_padding
        assert flash_attn.__version__ == "2.7.4" and callable(bert_padding.unpad_input)
    """, ASCEND_COMPAT_NO_PATCH="1"))


def test_diffusers_imports_the_flash_attn_drop_in_without_a_warning():
    """Was: every run importing diffusers' attention dispatch printed "flash_attn is installed but failed to
    import: _wrapped_flash_attn_backward" about the drop-in, which the user never installed."""
    pytest.importorskip("diffusers")
    from subproc import check, run_python

    out = check(run_python("""
        import logging, ascend_compat, torch
        logging.basicConfig(level=logging.WARNING)
        from diffusers.models import attention_dispatch as ad
        print("FLASH", ad._CAN_USE_FLASH_ATTN, ad._wrapped_flash_attn_backward is not None)
    """, ASCEND_COMPAT_SIMULATE="1"))
    assert "FLASH True True" in out


def test_deactivation_touches_no_other_module_and_survives_a_raising_getattr():
    """Deactivation removes the drop-ins without probing other modules through getattr: torch.ops
    (whose __getattr__ creates any name it is asked for) gains no attribute, and a module whose
    __getattr__ raises does not stop the clean-up."""
    proc = run("""
        import sys, types
        import torch
        import ascend_compat

        class Lazy(types.ModuleType):
            def __getattr__(self, name):
                raise RuntimeError("lazy module cannot load " + name)

        sys.modules["lazy_raising"] = Lazy("lazy_raising")
        import flash_attn
        ascend_compat.deactivate()
        print("LEFT", "flash_attn" in sys.modules, "__ascend_compat_dropin__" in torch.ops.__dict__)
    """, ASCEND_COMPAT_SIMULATE="1")
    assert "LEFT False False" in ok(proc)
    assert "could not revert" not in proc.stderr, proc.stderr
