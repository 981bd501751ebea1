"""``ascend_compat.accuracy`` on tiny real architectures run on the simulated NPU: a planted fault is the
first departure found, with its op, module and source line, and routing the op to the CPU makes the run
match; what Ascend does by design (HF32 convolutions, float64 run in float32 and returned within the
standard) is listed as on Ascend instead, and a float64 value that comes back wrong departs."""
from __future__ import annotations

import json
import subprocess
import sys

from subproc import check, clean_env, run_python

SIM = {"ASCEND_COMPAT_SIMULATE": "1"}


def result(proc) -> dict:
    line = next(ln for ln in check(proc).splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def test_faulty_gelu_in_bert_is_found_first_and_routing_it_to_the_cpu_fixes_it():
    out = result(run_python("""
        import json, torch, ascend_compat
        from transformers import BertConfig, BertModel
        from ascend_compat.accuracy import compare_model, route_to_cpu
        torch.manual_seed(0)
        config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=64, hidden_act="gelu")
        model = BertModel(config).eval()
        ids = torch.randint(0, 64, (2, 8))
        with torch.no_grad():
            cpu_out = model(ids).last_hidden_state
        model = model.cuda()
        report = compare_model(model, ids.cuda(), backward=False)
        first = report.first
        with route_to_cpu(["aten::gelu"]):
            fixed = compare_model(model, ids.cuda(), backward=False)
            with torch.no_grad():
                routed_out = model(ids.cuda()).last_hidden_state.cpu()
        with torch.no_grad():
            faulty_out = model(ids.cuda()).last_hidden_state.cpu()
        print("RESULT " + json.dumps({"op": first.name, "module": first.module, "file": first.site[0],
              "call": first.call, "departures": len(report.departures), "fixed": len(fixed.departures),
              "routed_err": float((routed_out - cpu_out).abs().max()),
              "faulty_err": float((faulty_out - cpu_out).abs().max())}))
    """, ASCEND_COMPAT_SIM_FAULTS="aten::gelu=bias:0.05", **SIM))
    assert out["op"] == "aten::gelu" and out["call"] == 1
    assert out["module"] == "BertModel.encoder.layer.0.intermediate.intermediate_act_fn"
    assert out["file"].endswith("activations.py")  # transformers' GELUActivation.forward
    assert out["departures"] == 2  # one per layer
    assert out["fixed"] == 0 and out["routed_err"] < 1e-5 < 1e-2 < out["faulty_err"]


def test_float64_rotary_table_is_judged_where_it_returns_to_float32(tmp_path):
    """torch_npu computes the float64 table in float32: near position 90,000 the angles lose ~5e-3 and the
    value returned to float32 departs; near position 0 it matches the float64 table within the standard
    and is listed as on Ascend, with the line it returns at and the line its segment started."""
    script = tmp_path / "llama_f64.py"
    script.write_text('''import json, sys, torch, ascend_compat
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
from ascend_compat.accuracy import compare


class Float64Rotary(LlamaRotaryEmbedding):
    """A rotary table computed in float64, as some ports write it."""

    def forward(self, x, position_ids):
        freqs = position_ids[:, :, None].double() * self.inv_freq[None, None, :].double()  # START
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)  # RETURN


torch.manual_seed(0)
config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=131072)
model = LlamaForCausalLM(config)
model.model.rotary_emb = Float64Rotary(config)
model = model.cuda()
out = {}
for start in (90000, 0):
    with compare() as c:
        model(torch.randint(0, 64, (1, 16)).cuda(), position_ids=torch.arange(start, start + 16)[None].cuda())
    r = c.report()
    f = r.first
    out[start] = {"first": None if f is None else [f.name, f.module, f.site[1], f.site[0], f.dtype, f.by_design, f.note],
                  "as_on_ascend": [[row["op"], row["site"]["line"], row["by_design"], row["module"]]
                                   for row in r.by_design()],
                  "invariant": c.seen == c.compared + c.ledger.total}
print("RESULT " + json.dumps(out))
''')
    out = result(run_python(f"exec(compile(open({str(script)!r}).read(), {str(script)!r}, 'exec'))", **SIM))
    lines = script.read_text().splitlines()
    start = next(n for n, text in enumerate(lines, 1) if "# START" in text)
    ret = next(n for n, text in enumerate(lines, 1) if "# RETURN" in text)
    far, near = out["90000"], out["0"]
    op, module, line, file, dtype, by_design, note = far["first"]
    assert (op, module, line, file, dtype) == ("aten::_to_copy", "LlamaForCausalLM.model.rotary_emb", ret, str(script),
                                               "float32")
    assert by_design == "float64" and note.endswith(f"{script}:{start}")
    assert near["first"] is None
    assert ["aten::_to_copy", ret, "float64", "LlamaForCausalLM.model.rotary_emb"] in near["as_on_ascend"]
    assert far["invariant"] and near["invariant"]


def test_hf32_convolution_in_a_resnet_block_is_as_on_ascend(tmp_path):
    """The earlier planted HF32 case: torch_npu's default HF32 convolutions are what CUDA's default TF32
    gives, so no departure; they are listed as on Ascend with their line and switch, and strict fails
    them. With the switch off there is nothing to list."""
    script = tmp_path / "resnet_block.py"
    script.write_text('''import json, torch, ascend_compat
from ascend_compat.accuracy import compare_model


class BasicBlock(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(c)
        self.conv2 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(c)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))  # LINE
        return torch.relu(self.bn2(self.conv2(y)) + x)


torch.manual_seed(0)
block = BasicBlock(16).cuda()
x = torch.randn(2, 16, 8, 8).cuda()
hf32 = compare_model(block, x)
torch.backends.cudnn.allow_tf32 = False  # under the shim this turns torch_npu's HF32 off too
exact = compare_model(block, x)
rows = hf32.by_design()
hf32.strict = True
print("RESULT " + json.dumps({"departures": len(hf32.departures), "passed": hf32.passed,
                              "listed": [[r["op"], r["module"], r["site"]["line"], r["by_design"], r["calls"]]
                                         for r in rows],
                              "control": rows[0]["control"], "exact_listed": len(exact.by_design()),
                              "exact_departures": len(exact.departures), "hf32_now": torch.npu.conv.allow_hf32}))
''')
    out = result(run_python(f"exec(compile(open({str(script)!r}).read(), {str(script)!r}, 'exec'))",
                            ASCEND_COMPAT_SIM_NUMERICS="npu", **SIM))
    line = next(n for n, text in enumerate(script.read_text().splitlines(), 1) if "# LINE" in text)
    assert out["departures"] == 0 and out["passed"] is False  # strict: the as-on-Ascend rows fail the gate
    assert ["aten::convolution", "BasicBlock.conv1", line, "hf32_conv", 1] in out["listed"]
    assert ["aten::convolution_backward", "BasicBlock.conv1", line, "hf32_conv", 1] in out["listed"]
    assert "torch.npu.conv.allow_hf32" in out["control"]
    assert out["hf32_now"] is False and out["exact_listed"] == 0 and out["exact_departures"] == 0


def test_nan_origin_is_the_op_that_made_it():
    out = result(run_python("""
        import json, torch, ascend_compat
        from ascend_compat.accuracy import compare
        x = torch.randn(4, 4).cuda()
        with compare() as c:
            y = (x @ x).relu().sum(0)
        r = c.report()
        print("RESULT " + json.dumps({"first": r.first.name, "nan": r.first.verdict.nan_origin,
                                      "others": [d.name for d in r.departures[1:]]}))
    """, ASCEND_COMPAT_SIM_FAULTS="aten::mm=nan", **SIM))
    assert out == {"first": "aten::mm", "nan": True, "others": []}  # relu and sum get the same NaN on the host


def test_injected_cann_error_is_explained():
    proc = run_python("import ascend_compat, torch; torch.nn.functional.gelu(torch.ones(2).cuda())",
                      ASCEND_COMPAT_SIM_FAULTS="aten::gelu=error:507035", **SIM)
    assert proc.returncode != 0 and "call aclnnGelu failed, error code is 507035" in proc.stderr
    from ascend_compat.errors import scan_text

    found = scan_text(proc.stderr)
    assert any("507035" in str(item) for item in found), found


def test_cost_controls():
    out = result(run_python("""
        import json, torch, ascend_compat
        from ascend_compat.accuracy import compare
        m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU()).cuda()
        x = torch.randn(2, 4).cuda()
        counts = {}
        for name, kw in {"all": {}, "ops": {"ops": ["aten::gelu"]}, "modules": {"modules": ["Sequential.0"]},
                         "sample": {"sample": 2}, "numel": {"max_numel": 4}}.items():
            with compare(**kw) as c:
                m(x)
            counts[name] = c.compared
        with compare(steps=1) as c:
            m(x); c.step(); m(x)
        counts["steps"] = c.compared
        print("RESULT " + json.dumps(counts))
    """, **SIM))
    assert out["all"] == 2 and out["ops"] == 1 and out["modules"] == 1 and out["sample"] == 1
    assert out["numel"] == 0 and out["steps"] == 2


def test_cli_gates_ci_and_writes_json(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import torch\nm = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU()).cuda()\n"
                      "m(torch.randn(2, 8).cuda()).sum().backward()\nprint('the script talks on stdout')\n")

    def cli(*args, **env):
        return subprocess.run([sys.executable, "-m", "ascend_compat", "compare", "--simulate", *args, str(script)],
                              capture_output=True, text=True, timeout=300, env=clean_env(**env), cwd=str(tmp_path))

    clean = cli()
    assert clean.returncode == 0 and "no departure" in clean.stdout
    assert "the script talks" in clean.stdout  # a text report: the script's output stays where it was
    faulty = cli("--format", "json", ASCEND_COMPAT_SIM_FAULTS="aten::gelu=scale:1.01")
    assert faulty.returncode == 1
    report = json.loads(faulty.stdout)  # the script's own output went to stderr
    assert "the script talks" in faulty.stderr
    assert report["schema"] == "ascend-compat/compare" and report["schema_version"] == "2.0"
    first = report["first_departure"]
    assert first["op"] == "aten::gelu" and first["site"]["line"] == 3 and first["standard"] == "benchmark"
    assert report["compared"] + report["not_compared"]["calls"] == report["seen"]
    fixed = cli(ASCEND_COMPAT_SIM_FAULTS="aten::gelu=scale:1.01", ASCEND_COMPAT_CPU_OPS="aten::gelu")
    assert fixed.returncode == 0, fixed.stdout
    assert cli("--sample", "0").returncode == 2


def test_routed_ops_count_as_fallbacks_and_are_restored():
    out = result(run_python("""
        import json, torch, ascend_compat
        from ascend_compat.accuracy import route_to_cpu, routed_to_cpu
        from ascend_compat.doctor import FallbackMonitor
        y = torch.zeros(3).cuda()
        with route_to_cpu(["aten::add_.Tensor", "aten::gelu"]), FallbackMonitor() as mon:
            y.add_(torch.ones(3).cuda())
            g = torch.nn.functional.gelu(y)
            inside = routed_to_cpu()
        with FallbackMonitor(method="dispatch") as dmon, route_to_cpu(["aten::gelu"]):
            torch.nn.functional.gelu(y)
        print("RESULT " + json.dumps({"y": y.cpu().tolist(), "device": str(g.device), "inside": inside,
                                      "after": routed_to_cpu(), "events": mon.report.summary(),
                                      "dispatch": dmon.report.summary()}))
    """, **SIM))
    assert out["y"] == [1.0, 1.0, 1.0] and out["device"] == "npu:0"
    assert out["inside"] == ["aten::add_.Tensor", "aten::gelu"] and out["after"] == []
    assert "aten::gelu (1 call)" in out["events"] and "aten::add_.Tensor (1 call)" in out["events"]
    assert "aten::gelu" in out["dispatch"]


def test_bad_cpu_ops_variable_warns_and_runs():
    proc = run_python("import ascend_compat, torch; print(torch.ones(1).cuda().device)",
                      ASCEND_COMPAT_CPU_OPS="gelu", **SIM)
    assert check(proc).strip() == "npu:0" and "ASCEND_COMPAT_CPU_OPS" in proc.stderr


def test_backward_departure_is_reported_at_its_forward_line_and_module(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(
        "import json, torch, ascend_compat\n"
        "from ascend_compat.accuracy import compare_model\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__(); self.lin = torch.nn.Linear(8, 8); self.act = torch.nn.GELU()\n"
        "    def forward(self, x):\n"
        "        return self.act(self.lin(x)) * 2  # line 7\n"
        "m = M().cuda(); x = torch.randn(2, 8).cuda()\n"
        "out = {}\n"
        "for key, kw in (('all', {}), ('filtered', {'modules': ['M.act']})):\n"
        "    r = compare_model(m, x, **kw)\n"
        "    f = r.first\n"
        "    out[key] = [f.name, f.phase, f.module, f.site[1], len(r.departures)]\n"
        "print('RESULT ' + json.dumps(out))\n")
    out = result(subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                                env=clean_env({"ASCEND_COMPAT_SIM_FAULTS": "aten::gelu_backward=bias:0.5", **SIM})))
    # the faulty backward kernel is named with the module and line of the forward call it differentiates,
    # and a module filter keeps backward ops of that module
    assert out["all"] == ["aten::gelu_backward", "backward", "M.act", 7, 1]
    assert out["filtered"] == ["aten::gelu_backward", "backward", "M.act", 7, 1]


def test_ops_that_move_data_cannot_be_routed():
    out = result(run_python("""
        import json, torch, ascend_compat
        from ascend_compat.accuracy import route_to_cpu, routed_to_cpu
        x = torch.randn(3).cuda()
        errors = {}
        for op in ("aten::_to_copy", "aten::copy_", "aten::empty_strided", "aten::_copy_from"):
            try:
                with route_to_cpu([op]):
                    x.to(torch.float16)
            except ValueError as exc:
                errors[op] = str(exc)
        print("RESULT " + json.dumps({"errors": errors, "after": routed_to_cpu(),
                                      "half": str(x.to(torch.float16).dtype)}))
    """, **SIM))
    # refused up front with the reason, instead of recursing without end (the routed kernel copies with them)
    assert sorted(out["errors"]) == ["aten::_copy_from", "aten::_to_copy", "aten::copy_", "aten::empty_strided"]
    assert all("move tensors between the NPU and the host" in e for e in out["errors"].values())
    assert out["after"] == [] and out["half"] == "torch.float16"
    proc = run_python("import ascend_compat, torch; print(torch.ones(1).cuda().device)",
                      ASCEND_COMPAT_CPU_OPS="aten::_to_copy", **SIM)
    assert check(proc).strip() == "npu:0" and "cannot be routed" in proc.stderr


def test_every_op_seen_is_compared_or_listed_and_npu_ops_are_compared_against_their_references(tmp_path):
    """SDPA runs as torch_npu's npu_fusion_attention (forward and grad: seen by the dispatch hook) and
    npu_rms_norm decomposes under autograd (compared at the Python level); both are compared against their
    CPU references, a fault injected into either is its first departure, and no op call goes unaccounted."""
    script = tmp_path / "attn.py"
    script.write_text('''import json, sys, torch, ascend_compat
import torch_npu
from ascend_compat.accuracy import compare


class Attn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(32, 96)
        self.w = torch.nn.Parameter(torch.ones(32))

    def forward(self, x):
        q, k, v = self.qkv(x).view(2, 16, 3, 4, 8).permute(2, 0, 3, 1, 4)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)  # SDPA
        y = y.transpose(1, 2).reshape(2, 16, 32)
        return torch_npu.npu_rms_norm(y, self.w)[0]  # RMS


torch.manual_seed(0)
m = Attn().cuda()
with compare() as c:
    m(torch.randn(2, 16, 32).cuda()).sum().backward()
r = c.report()
names = {x.name for x in c.results + c.departures + c.as_on_ascend}
print("RESULT " + json.dumps({"first": None if r.first is None else [r.first.name, r.first.site[1], r.first.module],
                              "compared_npu": sorted(n for n in names if n.startswith("npu::")),
                              "reasons": sorted(c.ledger.reasons()), "invariant": [c.seen, c.compared, c.ledger.total]}))
''')
    lines = script.read_text().splitlines()
    sdpa = next(n for n, text in enumerate(lines, 1) if "# SDPA" in text)
    rms = next(n for n, text in enumerate(lines, 1) if "# RMS" in text)
    run = f"exec(compile(open({str(script)!r}).read(), {str(script)!r}, 'exec'))"
    clean = result(run_python(run, **SIM))
    assert clean["first"] is None
    assert clean["compared_npu"] == ["npu::npu_fusion_attention", "npu::npu_fusion_attention_grad", "npu::npu_rms_norm"]
    seen, compared, listed = clean["invariant"]
    assert seen == compared + listed and all("host kernel" not in why for why in clean["reasons"])
    attention = result(run_python(run, ASCEND_COMPAT_SIM_FAULTS="npu::npu_fusion_attention=bias:0.05", **SIM))
    assert attention["first"] == ["npu::npu_fusion_attention", sdpa, "Attn"]
    norm = result(run_python(run, ASCEND_COMPAT_SIM_FAULTS="npu::npu_rms_norm=scale:1.01", **SIM))
    assert norm["first"] == ["npu::npu_rms_norm", rms, "Attn"]


def test_fused_attention_with_dropout_is_random_and_hf32_inside_it_is_not_a_departure():
    """nanoGPT's case: SDPA with dropout runs npu_fusion_attention with keep_prob < 1 (random: listed, not
    judged; its grad is judged); with ``allow_tf32`` on (HF32 matmuls, also inside the fused op's float32 computation) the eval
    call matches the host reference run with TF32-rounded matmuls, so it is no departure."""
    out = result(run_python("""
        import json, torch, ascend_compat
        from ascend_compat.accuracy import compare
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.manual_seed(0)
        q, k, v = (torch.randn(4, 4, 64, 16).cuda().requires_grad_() for _ in range(3))
        with compare() as c:
            torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.2, is_causal=True).sum().backward()
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16):
                torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        rows = {(r["op"], r["reason"].split(":")[0]): r["calls"] for r in c.ledger.rows()}
        print("RESULT " + json.dumps({"departures": [d.name for d in c.departures],
                                      "random": rows.get(("npu::npu_fusion_attention", "random"), 0),
                                      "compared": sorted({r.name for r in c.results + c.as_on_ascend
                                                          if r.name.startswith("npu::")})}))
    """, **SIM))
    # the grad replays the forward's dropout mask from its seed and offset: the host can, so it is compared
    assert out == {"departures": [], "random": 1,
                   "compared": ["npu::npu_fusion_attention", "npu::npu_fusion_attention_grad"]}
