"""audit_model / OpRecorder: real models run on the CPU, every op routed against the
generated torch_npu tables; statuses cross-checked with ascend_compat.data and torch's dispatcher."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch

from ascend_compat import data
from ascend_compat._files import display_path
from ascend_compat.knowledge import operators
from ascend_compat.doctor import audit_model
from ascend_compat.coverage.audit import REWRITES, AuditReport, OpRecorder

COMPOSITE_KEYS = ("CompositeExplicitAutogradNonFunctional", "CompositeExplicitAutograd", "CompositeImplicitAutograd")


def _consistent(report: AuditReport) -> None:
    """Every status agrees with the data tables and the dispatcher, and the summary with the counts."""
    native = data.native_ops(report.torch_npu_version)
    for o in report.ops:
        name = data.normalize_op_name(o.op)
        if o.note is not None:  # host-specific op judged as its NPU equivalent
            continue
        if o.status == "native":
            assert name in native, o
        elif o.status == "composite":
            assert name not in native and any(
                torch._C._dispatch_has_kernel_for_dispatch_key(o.op, k) for k in COMPOSITE_KEYS), o
        elif o.status == "cpu_fallback":
            assert data.would_fall_back(name, report.torch_npu_version), o
        elif o.status == "unsupported_dtype":
            assert o.unsupported_dtypes and set(o.unsupported_dtypes) <= set(operators.dtype_refusals(name)), o
    judged = [o for o in report.ops if o.status != "other"]
    ok = sum(o.status in ("native", "composite") for o in judged)
    m = re.fullmatch(r"Operator Coverage: (\d+\.\d)% native, (\d+) CPU fallback ops?(, \d+ ops? with unsupported dtypes)?",
                     report.summary())
    assert m, report.summary()
    assert float(m.group(1)) == pytest.approx(100.0 * ok / len(judged), abs=0.051)
    assert int(m.group(2)) == sum(o.status == "cpu_fallback" for o in report.ops)
    json.loads(report.to_json())


class Quirky(torch.nn.Module):
    """A small model using ops torch_npu has no kernel for."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        y = torch.fmax(y, torch.zeros_like(y))  # LINE-fmax
        votes = torch.mode(x.argmax(dim=1)).values  # LINE-mode
        return y * (votes + 1)


def _line(marker: str) -> int:
    with open(__file__, encoding="utf-8") as fh:
        return next(i for i, line in enumerate(fh, 1) if marker in line and "def _line" not in line)


def test_fallback_ops_with_calls_frames_and_rewrites():
    torch.manual_seed(0)
    model = Quirky()
    x = torch.randn(4, 8)
    expected = model(x)
    report = audit_model(model, x)
    assert torch.equal(model(x), expected)
    assert [o.op for o in report.fallbacks] == ["aten::fmax.out", "aten::mode"]
    fmax, mode = report["fmax.out"], report["aten::mode"]
    assert fmax.calls == 1 and mode.calls == 1 and mode.phases == ("forward",)
    assert fmax.first_frame.file == __file__ and fmax.first_frame.line == _line("LINE-fmax")
    assert mode.first_frame.line == _line("LINE-mode") and mode.first_frame.function == "forward"
    assert fmax.rewrite == REWRITES["fmax"][0] and mode.rewrite == REWRITES["mode"][0]
    assert "float32" in fmax.dtypes and "int64" in mode.dtypes
    assert report["addmm"].status == "native" and report["t"].status == "composite"
    text = report.text()
    assert report.summary() in text and "rewrite: torch.maximum" in text
    assert f"first at {display_path(__file__)}:{_line('LINE-fmax')} in forward" in text  # relative below the cwd
    _consistent(report)


def test_backward_is_recorded_and_changes_nothing():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.GELU(), torch.nn.Linear(12, 3))
    x = torch.randn(5, 6)
    model(x).backward(torch.ones(5, 3))
    grads = [p.grad.clone() for p in model.parameters()]
    report = audit_model(model, x, backward=True)
    assert [torch.equal(p.grad, g) for p, g in zip(model.parameters(), grads)] == [True] * 4  # restored
    assert report.phases == ("forward", "backward")
    assert report["gelu_backward"].phases == ("backward",) and "backward" in report["mm"].phases
    assert report["addmm"].calls == 2 and report.fallbacks == []
    _consistent(report)
    with torch.no_grad(), pytest.raises(ValueError, match="no output tensor requires grad"):
        audit_model(model, x, backward=True)


def test_versions_compared():
    # torch_npu up to 2.6 registers gelu itself; from 2.7 only gelu.out (gelu runs as a composite)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU())
    x = torch.randn(2, 4)
    old, new = audit_model(model, x, torch_npu_version="2.5.1"), audit_model(model, x)
    assert old.torch_npu_version == "2.5" and new.torch_npu_version == data.native_op_versions()[-1]
    assert old["gelu"].status == "native" and "gelu.out" not in old
    assert new["gelu"].status == "composite" and new["gelu.out"].status == "native"
    # the structured composite allocates its output, then calls gelu.out
    v = new.torch_npu_version
    assert old.diff(new) == [{"op": "aten::gelu", "2.5": "native", v: "composite"},
                             {"op": "aten::empty.memory_format", "2.5": None, v: "native"},
                             {"op": "aten::gelu.out", "2.5": None, v: "native"}]
    _consistent(old)
    _consistent(new)


def test_recorder_sees_optimizer_ops_per_version():
    p = torch.nn.Parameter(torch.ones(3))
    p.grad = torch.ones(3)
    opt = torch.optim.Adam([p], lr=0.1, fused=True)
    reports = {}
    for version in ("2.1", None):
        with OpRecorder(version) as rec:
            opt.step()
        reports[version] = rec.report()
    assert reports["2.1"]["_fused_adam_"].status == "cpu_fallback"
    assert reports[None]["_fused_adam_"].status == "native"


def test_float64_runs_as_on_torch_npu_refusals_and_downcasts_follow_the_dtype_table():
    """torch_npu computes float64 where its kernels take it; only the recorded refusals are
    unsupported, and a dtype-only cast to float64 gives float32 (issue 23, item 6)."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh()).double()
    x = torch.randn(3, 8, dtype=torch.float64)
    report = audit_model(model, x)
    assert report["addmm"].status == "native" and report["tanh"].status == "native"
    assert report.unsupported == [] and "unsupported" not in report.summary()
    with OpRecorder() as rec:
        torch.sort(x, stable=True)  # LINE-sort-stable
        torch.sort(x.float(), stable=True)
        x.max(dim=0)  # aclnnMaxDim has no DT_DOUBLE
        x.max()  # without dim: another API, fine
        torch.randn(3).double()  # LINE-double
        torch.randn(3).to("cpu", torch.float64)  # a device given: float64 on torch_npu too
        i16 = torch.ones(2, dtype=torch.int16)
        torch.addcmul(i16, i16, i16)  # aclnnAddcmul has no DT_INT16
    audit = rec.report()
    stable = audit["sort.stable"]
    assert stable.status == "unsupported_dtype" and stable.unsupported_dtypes == ("float64",)
    assert "Input data type should not be float64" in stable.note and stable.first_frame.line == _line("LINE-sort-stable")
    assert audit["max.dim"].status == "unsupported_dtype" and "aclnnMaxDim" in audit["max.dim"].note
    assert audit["max"].status == "native"
    copy = audit["_to_copy"]
    assert copy.status == "native" and copy.note.startswith("1 dtype-only cast(s) to float64")
    assert operators.float64_downcast_message() in copy.note
    assert audit["addcmul"].unsupported_dtypes == ("int16",) and "aclnnAddcmul" in audit["addcmul"].note
    assert "cast to a dtype the kernel takes" in audit.text()
    _consistent(audit)


def test_cpu_attention_is_judged_as_the_npu_kernel():
    q = torch.randn(1, 2, 4, 8)
    with OpRecorder() as rec:
        torch.nn.functional.scaled_dot_product_attention(q, q, q)
    op = rec.report()["_scaled_dot_product_flash_attention_for_cpu"]
    assert op.status == "native" and "scaled_dot_product_attention" in op.note


def test_rewrites_name_real_fallbacks_and_native_replacements():
    newest = data.native_op_versions()[-1]
    targets = {"mode": "mode", "fmax": "fmax.out", "fmin": "fmin.out", "heaviside": "heaviside.out",
               "histogram": "histogram.bin_ct", "nonzero_static": "nonzero_static"}
    assert set(REWRITES) == set(targets)
    for base, (advice, replacements) in REWRITES.items():
        assert data.would_fall_back(targets[base], newest), base
        for version in data.native_op_versions():
            for op in replacements:
                assert data.is_native(op, version), (base, op, version)


def test_device_argument_checks():
    model = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="move the model first"):
        audit_model(model, torch.randn(1, 2), device="meta")
    report = audit_model(model, (torch.randn(1, 2),), device="cpu")
    assert report.device == "cpu" and report["addmm"].calls == 1
    with pytest.raises(ValueError, match="older than every version"):
        audit_model(model, torch.randn(1, 2), torch_npu_version="1.11")


# ---------------------------------------------------------------- real models

def _tiny_transformers():
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    ids = torch.randint(0, 96, (2, 12), generator=torch.Generator().manual_seed(0))
    return {
        "llama": transformers.LlamaForCausalLM(transformers.LlamaConfig(
            vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=32)),
        "bert": transformers.BertModel(transformers.BertConfig(
            vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            max_position_embeddings=32)),
        "gpt2": transformers.GPT2LMHeadModel(transformers.GPT2Config(
            vocab_size=96, n_embd=32, n_layer=2, n_head=4, n_positions=32, bos_token_id=0, eos_token_id=0)),
    }, {"input_ids": ids}


@pytest.mark.parametrize("name", ["llama", "bert", "gpt2"])
def test_transformers_models_from_configs(name):
    models, inputs = _tiny_transformers()
    model = models[name]
    report = audit_model(model, inputs, backward=True)
    _consistent(report)
    ops = {data.normalize_op_name(o.op) for o in report.ops}
    assert "embedding" in ops and "embedding_dense_backward" in ops
    assert ops & {"mm", "addmm", "bmm"}
    assert report.phases == ("forward", "backward")
    assert not [o for o in report.ops if o.status == "other"]
    # what the tables say about these architectures: every op has an NPU kernel or composite
    assert report.fallbacks == [] and report.unsupported == []
    assert report.summary().startswith("Operator Coverage: 100.0% native, 0 CPU fallback ops")


def _torchvision():
    try:
        import torchvision
    except ImportError:
        pytest.skip("torchvision needs torch 2.14.1 here")
    return torchvision


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small"])
def test_torchvision_models(name):
    torchvision = _torchvision()
    model = getattr(torchvision.models, name)(weights=None)
    report = audit_model(model, torch.randn(2, 3, 64, 64), backward=True)
    _consistent(report)
    assert report["convolution"].status == "native" and report["convolution_backward"].status == "native"
    assert report.fallbacks == []
    old = audit_model(model.eval(), torch.randn(1, 3, 64, 64), torch_npu_version="2.1")
    _consistent(old)


def test_audit_on_the_simulated_npu():
    code = """
        import torch
        from ascend_compat import simulator
        simulator.install()
        from ascend_compat.doctor import audit_model
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU()).to("npu")
        report = audit_model(model, torch.randn(4, 8), backward=True)
        print(report.device, report["addmm"].status, report["gelu.out"].status, report.fallbacks)
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_COMPAT_", "TORCH_NPU_"))}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["npu:0", "native", "native", "[]"]
