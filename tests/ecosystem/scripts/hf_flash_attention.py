"""Tiny Llama / Qwen2 / Mistral on the simulated NPU: flash_attention_2 vs sdpa/eager (prints JSON).

Usage: python hf_flash_attention.py FAMILY [FAMILY...] [--shim]
Without --shim: installs the simulator and calls transformers_patch.apply() by hand.
With --shim: relies on ASCEND_COMPAT_SIMULATE=1 + ``import ascend_compat`` (and apply() if the shim
has not applied the transformers patches itself).
Per family it reports the max |logit| differences (fa2 vs sdpa, fa2 with padding vs sdpa with
padding), gradient differences after one training step, devices, and for Mistral the sliding
window result before and after the patch.
"""
import json
import os
import sys
import tempfile


os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
shim = "--shim" in sys.argv
families = [a for a in sys.argv[1:] if not a.startswith("--")]

if shim:
    import ascend_compat  # noqa: F401 - activates with ASCEND_COMPAT_SIMULATE=1
else:
    from ascend_compat import simulator

    simulator.install()
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

from ascend_compat.ecosystem.integrations import transformers_patch  # noqa: E402

SEQ = 12
DEV = "cuda" if shim else "npu"  # a CUDA script under the shim; npu code otherwise


def emit(report):
    """One RESULT line in a single write (ranks share the pipe; PYTHONUNBUFFERED splits print())."""
    os.write(1, ("RESULT " + json.dumps(report) + "\n").encode())


def config(family, **extra):
    common = dict(vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, **extra)
    if family == "llama":
        return transformers.LlamaConfig(**common)
    if family == "qwen2":
        return transformers.Qwen2Config(**common)
    if family == "mistral":
        return transformers.MistralConfig(sliding_window=extra.pop("sliding_window", None) or 4,
                                          **{k: v for k, v in common.items() if k != "sliding_window"})
    raise SystemExit(f"unknown family {family}")


def saved(family, tmp, **extra):
    torch.manual_seed(0)
    path = os.path.join(tmp, family)
    AutoModelForCausalLM.from_config(config(family, **extra)).save_pretrained(path)
    return path


def load(path, attn, **kw):
    kw.setdefault("device_map", DEV)
    return AutoModelForCausalLM.from_pretrained(path, attn_implementation=attn, dtype=torch.float16, **kw)


def grads(model, ids, mask):
    model.train()
    model.zero_grad()
    out = model(input_ids=ids, attention_mask=mask, labels=ids)
    out.loss.backward()
    return out.loss.float().item(), {n: p.grad.float().clone() for n, p in model.named_parameters()}


def maxdiff(a, b):
    return float((a.float() - b.float()).abs().max())


def family_report(family, tmp):
    path = saved(family, tmp)
    torch.manual_seed(1)
    ids = torch.randint(0, 96, (2, SEQ), device=DEV)
    mask = torch.ones_like(ids)
    mask[1, :3] = 0  # left padding in row 1 -> the varlen (unpad) path
    fa2, sdpa = load(path, "flash_attention_2"), load(path, "sdpa")
    rep = {"device": str(next(fa2.parameters()).device), "attn": fa2.config._attn_implementation}
    with torch.no_grad():
        rep["logits_dense"] = maxdiff(fa2(ids).logits, sdpa(ids).logits)
        rep["logits_dense_eager"] = maxdiff(fa2(ids).logits, load(path, "eager")(ids).logits)
        a, b = fa2(ids, attention_mask=mask).logits, sdpa(ids, attention_mask=mask).logits
        rep["logits_padded"] = maxdiff(a[mask.bool()], b[mask.bool()])
        rep["logit_scale"] = float(b.float().abs().max())
    la, ga = grads(fa2, ids, mask)
    lb, gb = grads(sdpa, ids, mask)
    rep["loss"] = [la, lb]
    rep["grad_rel"] = max(maxdiff(ga[n], gb[n]) / (float(gb[n].abs().max()) + 1e-6) for n in gb)
    rep["grads_finite"] = all(bool(torch.isfinite(g).all()) for g in ga.values())
    before = {n: p.detach().clone() for n, p in fa2.named_parameters()}
    torch.optim.SGD(fa2.parameters(), lr=1e-2).step()
    rep["params_moved"] = any(not torch.equal(before[n], p) for n, p in fa2.named_parameters())
    return rep


def device_map_report(tmp):
    """Where the parameters land for device_map values users pass (ints, "auto", CUDA names)."""
    path = saved("llama", tmp)
    ndev = torch.npu.device_count()
    maps = {"auto": "auto", "int0": 0, "empty_key_int": {"": 0}, "balanced": "balanced"}
    if shim:
        maps.update({"cuda": "cuda", "cuda0": "cuda:0", "cuda_device": torch.device("cuda:0")})
    if ndev >= 2:
        maps["split"] = {"model.embed_tokens": 0, "model.layers.0": 0, "model.layers.1": 1,
                         "model.norm": 1, "model.rotary_emb": 1, "lm_head": 1}
    rep = {"device_count": ndev}
    ids = torch.randint(0, 96, (1, SEQ), device="npu:0")
    for name, dm in maps.items():
        kw = {"device_map": dm}
        if name == "auto" and ndev >= 2:
            kw["max_memory"] = {0: "130KB", 1: "10MB"}  # forces a split across both devices
        m = load(path, "flash_attention_2", **kw)
        with torch.no_grad():
            logits = m(ids).logits
        rep[name] = {"devices": sorted({str(p.device) for p in m.parameters()}), "out": str(logits.device),
                     "finite": bool(torch.isfinite(logits).all())}
    return rep


def sliding_window_logits(tmp, attn):
    """Mistral with sliding_window=4 < SEQ (eager masks the window: the reference)."""
    path = os.path.join(tmp, "mistral_sw")
    if not os.path.isdir(path):
        torch.manual_seed(0)
        AutoModelForCausalLM.from_config(config("mistral")).save_pretrained(path)
    torch.manual_seed(2)
    ids = torch.randint(0, 96, (1, SEQ), device=DEV)
    with torch.no_grad():
        return load(path, attn)(ids).logits


def main():
    out = {"transformers": transformers.__version__}
    with tempfile.TemporaryDirectory() as tmp:
        if "mistral_window" in families:
            ref = sliding_window_logits(tmp, "eager")
            out["mistral_window"] = {"window": 4, "seq": SEQ, "scale": float(ref.float().abs().max())}
            if "--no-unpatched" not in sys.argv:  # what transformers computes without the patch
                out["mistral_window"]["unpatched_vs_eager"] = maxdiff(sliding_window_logits(tmp, "flash_attention_2"), ref)
        out["applied_now"] = transformers_patch.apply()
        if "mistral_window" in families:
            out["mistral_window"]["patched_vs_eager"] = maxdiff(sliding_window_logits(tmp, "flash_attention_2"), ref)
        for fam in families:
            if fam == "device_map":
                out[fam] = device_map_report(tmp)
            elif fam != "mistral_window":
                out[fam] = family_report(fam, tmp)
    from ascend_compat.cuda_shim import registry
    out["hits"] = {k: v for k, v in registry.counters().items() if "flash_attention_2" in k}
    emit(out)


main()
