"""transformers on the simulated NPU: flash_attention_2 for Llama/Qwen2/Mistral, sliding windows,
device maps (real transformers + accelerate, tiny random models saved locally, no hub)."""
from __future__ import annotations

import pytest

from _eco_libs import SCRIPTS, need, results, run

pytestmark = [need("transformers", "transformers"), need("accelerate", "transformers"),
              pytest.mark.xdist_group("eco-transformers")]  # one shared subprocess report per worker


@pytest.fixture(scope="module")
def report():
    """One subprocess under the shim (2 simulated NPUs) runs every scenario; ~30 s on 2 cores.

    The shim's own transformers integration is disabled so the script can measure unpatched
    transformers first and then apply() it (the automatic path: test_shim_applies_the_patch_itself).
    """
    proc = run(["python", str(SCRIPTS / "hf_flash_attention.py"), "--shim", "mistral_window", "llama", "qwen2",
                "mistral", "device_map"],
               {"ASCEND_COMPAT_SIMULATE": "1", "ASCEND_COMPAT_SIM_DEVICES": "2",
                "ASCEND_COMPAT_DISABLE": "transformers"}, timeout=300)
    return results(proc)[0]


def test_explicit_apply_applied_the_patch(report):
    assert report["applied_now"] > 0  # the integration was off until the script's apply()


@pytest.mark.parametrize("family", ["llama", "qwen2", "mistral"])
def test_flash_attention_2_matches_sdpa_and_eager_fp16(report, family):
    r = report[family]
    assert r["device"] == "npu:0" and r["attn"] == "flash_attention_2"
    tol = 2e-2 * max(1.0, r["logit_scale"])  # float16 logits
    assert r["logits_dense"] <= tol and r["logits_dense_eager"] <= tol
    assert r["logits_padded"] <= tol  # padded batch -> unpad -> varlen (TND) path


@pytest.mark.parametrize("family", ["llama", "qwen2", "mistral"])
def test_one_training_step(report, family):
    r = report[family]
    fa2_loss, sdpa_loss = r["loss"]
    assert abs(fa2_loss - sdpa_loss) <= 1e-2 * abs(sdpa_loss)
    assert r["grads_finite"] and r["grad_rel"] <= 5e-2 and r["params_moved"]


def test_flash_calls_go_through_the_drop_in(report):
    hits = report["hits"]
    assert hits.get("transformers flash_attention_2 -> ascend_compat flash_attn", 0) > 0
    assert hits.get("transformers flash_attention_2 (varlen) -> ascend_compat flash_attn", 0) > 0


def test_sliding_window_honoured_not_dropped(report):
    """Mistral, sliding_window=4 < 12 tokens. Unpatched transformers drops the window on NPU (its
    npu_flash_attn_func has no window_size parameter); patched, fa2 matches eager's window mask."""
    r = report["mistral_window"]
    tol = 2e-2 * max(1.0, r["scale"])
    assert r["unpatched_vs_eager"] > 10 * tol, "the known transformers fault did not reproduce: re-check the patch"
    assert r["patched_vs_eager"] <= tol


@pytest.mark.parametrize("name", ["auto", "int0", "empty_key_int", "balanced", "cuda", "cuda0", "cuda_device"])
def test_device_map_lands_on_npu(report, name):
    r = report["device_map"][name]
    assert r["devices"] and all(d.startswith("npu:") for d in r["devices"]), r
    assert r["out"].startswith("npu") and r["finite"]


def test_device_map_auto_splits_across_two_npus(report):
    dm = report["device_map"]
    assert dm["device_count"] == 2
    assert dm["auto"]["devices"] == ["npu:0", "npu:1"]  # max_memory forces a split
    assert dm["split"]["devices"] == ["npu:0", "npu:1"]


def test_top_left_mode_refuses_windows_instead_of_dropping_them():
    """NPU_FA2_SPARSE_MODE=2 keeps transformers' own functions; a window must raise, not vanish."""
    proc = run(["python", "-c", (
        "import os, torch\n"
        "from ascend_compat import simulator; simulator.install()\n"
        "from ascend_compat.ecosystem.integrations import transformers_patch; transformers_patch.apply()\n"
        "from transformers.integrations import npu_flash_attention as n\n"
        "assert n.SPARSE_MODE == 2\n"
        "q = torch.randn(1, 8, 2, 16, dtype=torch.float16, device='npu')\n"
        "n.npu_flash_attn_func(q, q, q, causal=True)\n"
        "try:\n"
        "    n.npu_flash_attn_func(q, q, q, causal=True, window_size=(3, 3))\n"
        "except NotImplementedError as e:\n"
        "    print('REFUSED', e)\n")], {"NPU_FA2_SPARSE_MODE": "2"})
    assert "REFUSED" in proc.stdout and "NPU_FA2_SPARSE_MODE" in proc.stdout


def test_shim_applies_the_patch_itself_and_deactivate_restores_it():
    proc = run(["python", "-c", (
        "import ascend_compat, inspect\n"
        "from transformers.integrations import npu_flash_attention as n\n"
        "assert 'window_size' in inspect.signature(n.npu_flash_attn_func).parameters  # no apply() call\n"
        "from ascend_compat.ecosystem.integrations import transformers_patch\n"
        "assert transformers_patch.apply() == 0  # idempotent with the shim's own\n"
        "ascend_compat.deactivate()\n"
        "assert 'window_size' not in inspect.signature(n.npu_flash_attn_func).parameters\n"
        "print('OK')\n")], {"ASCEND_COMPAT_SIMULATE": "1"})
    assert "OK" in proc.stdout
