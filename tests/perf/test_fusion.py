"""Fused-op advice: every rule of ``knowledge.fusion`` is found at its line in a block written by hand
(tests/perf/scripts/fusible.py), none in the same block written with the fused forms (fused_clean.py),
and every replacement the advice names runs on the simulated NPU and gives what the hand-written form
gives (within the rule's tolerance where the fused op approximates)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from ascend_compat.knowledge import fusion

SCRIPTS = Path(__file__).resolve().parent / "scripts"
FUSE = re.compile(r"# FUSE (\S+)")
FUSED_RULES = {r.id for r in fusion.RULES} | {"fused-optimizer"}


def _profile(script: str) -> dict:
    from subproc import clean_env

    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "profile", "--simulate", "--format", "json", script],
                          cwd=str(SCRIPTS), capture_output=True, text=True, timeout=600, env=clean_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_every_rule_is_found_at_its_line_with_replacement_and_version():
    marked = {(m.group(1), n) for n, line in enumerate((SCRIPTS / "fusible.py").read_text().splitlines(), 1)
              for m in [FUSE.search(line)] if m}
    assert {rule for rule, _ in marked} == FUSED_RULES  # the script exercises every rule
    report = _profile("fusible.py")
    found = {(f["rule"], f["site"]["line"]) for f in report["findings"] if f["rule"] in FUSED_RULES}
    assert found == marked
    for f in report["findings"]:
        if f["rule"] in FUSED_RULES - {"fused-optimizer"}:
            rule = fusion.by_id(f["rule"])
            assert f["severity"] == rule.severity and rule.replacement in f["fix"] and f["phase"] == "train"
            assert "torch_npu release from 2.1" in f["fix"] or "torch_npu 2." in f["fix"]
            assert f["weight"]["matches_per_step"] == 1


def test_the_fused_forms_get_no_fused_advice():
    report = _profile("fused_clean.py")
    assert not [f for f in report["findings"] if f["rule"] in FUSED_RULES], report["findings"]
    assert [f["rule"] for f in report["findings"]] == ["fp32-matmul"]


def test_every_rule_names_an_op_torch_npu_has():
    for rule in fusion.RULES:
        assert fusion.available_from(rule.op) is not None, rule.id
        assert rule.severity in ("medium", "low") and 0 <= rule.anchor < max(len(c) for c in rule.chains)
    for spec in fusion.FUSED_OPTIMIZERS:
        assert spec.fused_op is None or fusion.available_from(spec.fused_op) is not None, spec.name


PROOF = """
import json, math
import torch
import torch.nn.functional as F
from ascend_compat import simulator
simulator.install()
import torch_npu

torch.manual_seed(0)
dev = "npu"
B, N, T, D = 2, 4, 8, 16
diff = {}

def d(name, a, b):
    diff[name] = max(diff.get(name, 0.0), float((a.float() - b.float()).abs().max().cpu()))

# attention: softmax(q k^T * scale, masked) v
q, k, v = (torch.randn(B, N, T, D, device=dev) for _ in range(3))
causal = torch.tril(torch.ones(T, T, device=dev)).view(1, 1, T, T)
att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
att = att.masked_fill(causal == 0, float("-inf"))
ref = F.softmax(att, dim=-1) @ v
d("fused-attention", ref, F.scaled_dot_product_attention(q, k, v, is_causal=True))
drop = torch.triu(torch.ones(T, T, dtype=torch.bool, device=dev), 1)
d("fused-attention", ref, torch_npu.npu_fusion_attention(q, k, v, N, "BNSD", atten_mask=drop,
                                                         scale=1.0 / math.sqrt(D), keep_prob=1.0)[0])

# RMSNorm
x = torch.randn(B, T, 32, device=dev)
w = torch.randn(32, device=dev)
ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
d("fused-rms-norm", ref, torch_npu.npu_rms_norm(x, w, epsilon=1e-6)[0])
d("fused-rms-norm", ref, x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w)  # the second chain

# rotary (rotate_half)
xq = torch.randn(B, N, T, D, device=dev)
cos, sin = torch.randn(1, 1, T, D, device=dev), torch.randn(1, 1, T, D, device=dev)
x1, x2 = xq.chunk(2, dim=-1)
ref = xq * cos + torch.cat((-x2, x1), dim=-1) * sin
d("fused-rotary", ref, torch_npu.npu_rotary_mul(xq, cos, sin))

# SwiGLU and GeGLU on the two halves of one tensor
h = torch.randn(B, T, 64, device=dev)
gate, value = h.chunk(2, dim=-1)
d("fused-swiglu", F.silu(gate) * value, torch_npu.npu_swiglu(h, dim=-1))
d("fused-swiglu", gate * torch.sigmoid(gate) * value, torch_npu.npu_swiglu(h, dim=-1))  # the second chain
d("fused-geglu", F.gelu(gate, approximate="tanh") * value,
  torch_npu.npu_geglu(h, dim=-1, approximate=1, activate_left=True)[0])
d("fused-geglu", F.gelu(gate) * value, torch_npu.npu_geglu(h, dim=-1, approximate=0, activate_left=True)[0])

# GELU: the tanh formula written out, and npu_fast_gelu's approximation of GELU
a = torch.randn(4096, device=dev) * 4
ref = 0.5 * a * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (a + 0.044715 * torch.pow(a, 3.0))))
d("fused-gelu", ref, F.gelu(a, approximate="tanh"))
d("fast-gelu", F.gelu(a), torch_npu.npu_fast_gelu(a))

# add + LayerNorm
r1, r2 = torch.randn(B, T, 32, device=dev), torch.randn(B, T, 32, device=dev)
g, bb = torch.randn(32, device=dev), torch.randn(32, device=dev)
y, mean, rstd, s = torch.ops.npu.npu_add_layer_norm(r1, r2, g, bb, 1e-5)
d("fused-add-layer-norm", F.layer_norm(r1 + r2, (32,), g, bb, 1e-5), y)
d("fused-add-layer-norm", r1 + r2, s)

# transpose, contiguous, view
t = torch.randn(B, N, T, D, device=dev)
d("fused-confusion-transpose", t.transpose(1, 2).contiguous().view(B, T, N * D),
  torch_npu.npu_confusion_transpose(t, (0, 2, 1, 3), (B, T, N * D), True))

# a fused AdamW takes the same steps as the foreach one
torch.manual_seed(1)
base = [torch.randn(16, 16, device=dev) for _ in range(3)]
grads = [[torch.randn(16, 16, device=dev) for _ in base] for _ in range(3)]
finals = []
for options in ({"foreach": True}, {"fused": True}):
    params = [torch.nn.Parameter(p.clone()) for p in base]
    opt = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1, **options)
    for step_grads in grads:
        for p, gr in zip(params, step_grads):
            p.grad = gr.clone()
        opt.step()
    finals.append(params)
for p_foreach, p_fused in zip(*finals):
    d("fused-optimizer", p_foreach.detach(), p_fused.detach())
print(json.dumps(diff))
"""


def test_every_replacement_runs_on_the_simulated_npu_and_matches():
    from subproc import check, run_python

    diff = json.loads(check(run_python(PROOF)).strip().splitlines()[-1])
    assert set(diff) == FUSED_RULES  # each rule has its proof
    for rule_id, worst in diff.items():
        tolerance = fusion.by_id(rule_id).tolerance if rule_id != "fused-optimizer" else 0.0
        assert worst <= max(tolerance, 2e-5), (rule_id, worst)
