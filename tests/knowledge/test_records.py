"""The knowledge records are executable claims, and check and the shim read the same records.

Each record's example runs under ``ascend-compat run --simulate`` (all examples of one kind in one
subprocess, each isolated and reported as JSON): auto environment variables must reach their Ascend
name, variables the shim does not translate must stay untouched and derive nothing, drop-in
libraries must run on the npu device and show their documented difference, manual libraries must
fail (the import, or the first use); device, backend and extension records (auto: lands on npu;
partial: prints the documented difference; manual: raises, and the advised edit runs). The run's
torch / torch_npu / library versions must lie in every record's version ranges. check, migrate and
the shim are then asked about the same records and must agree with them (the ``torch.cuda`` name
records: ``test_cuda_names.py``).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ascend_compat.analysis.rules.catalog import RULES
from ascend_compat.analysis.scan import scan_file
from ascend_compat.cuda_shim.mapping.env_vars import ENV_MAP
from ascend_compat.knowledge import (AUTO, MANUAL, PARTIAL, backends, compile, cuda_names, devices, env_vars, extensions,
                                     libraries)
from ascend_compat.knowledge.records import Construct, advice_problems, placeholder_problems
from knowledge.simulated import run_examples, run_simulated

CONSTRUCTS = devices.RECORDS + backends.RECORDS + extensions.RECORDS + compile.RECORDS



def _concrete(name: str) -> str:
    return name[:-1] + "EXAMPLE" if name.endswith("*") else name


def test_every_record_has_an_example():
    missing = [r.name for r in libraries.RECORDS if not r.example or (r.verdict == PARTIAL and not r.expect)]
    missing += [r.name for r in CONSTRUCTS if not r.example or not r.expect]
    missing += [r.name for r in env_vars.RECORDS if r.shim_maps and r.example is None]
    assert missing == []


def test_env_var_examples_under_the_simulator(tmp_path):
    """Translated variables reach their Ascend name with the converted value; every other record
    (partial: "set the Ascend variable yourself" / "ignored on Ascend", manual) is left exactly as set
    and makes no Ascend variable appear: the documented difference, observed."""
    auto = [r for r in env_vars.RECORDS if r.shim_maps and r.example]
    # two records that map to the same Ascend name cannot be proven in one process
    by_target: dict[str, list] = {}
    for r in auto:
        by_target.setdefault(r.ascend, []).append(r)
    rounds = max(len(v) for v in by_target.values())
    untranslated = {_concrete(r.name): "1" for r in env_vars.RECORDS if not r.shim_maps}
    script = """
        import json, os, torch
        assert torch.ones(1).cuda().device.type == "npu"
        print(json.dumps(dict(os.environ)))
        """
    baseline = run_simulated(script, tmp_path)
    for i in range(rounds):
        batch = [v[i] for v in by_target.values() if len(v) > i]
        env = {r.name: r.example[0] for r in batch}
        env.update(untranslated)
        got = run_simulated(script, tmp_path, **env)
        for r in batch:
            assert got[r.ascend] == r.example[1], r.name
        appeared = {k for k in got if k not in baseline and k not in env}
        assert appeared == {r.ascend for r in batch}
        assert {k: got.get(k) for k in untranslated} == untranslated


_VERSIONS = "__versions__"


def _versions_probe(libs: list[str]) -> str:
    """An example printing, as JSON, the torch and torch_npu versions of the run and those of ``libs``."""
    return ("import importlib.metadata as md, json, torch, torch_npu\n"
            "def v(name):\n    try:\n        return md.version(name)\n    except md.PackageNotFoundError:\n"
            "        return None\n"
            f"print(json.dumps({{'torch': torch.__version__, 'torch_npu': torch_npu.__version__, "
            f"'libs': {{n: v(n) for n in {libs!r}}}}}))")


def _assert_examples_apply(records, got: dict) -> None:
    """The run's versions lie inside every record's ranges: its example proves the record where it applies."""
    seen = json.loads(got[_VERSIONS][len("ran:"):])
    outside = [r.name for r in records
               if not r.versions.applies(torch=seen["torch"], torch_npu=seen["torch_npu"],
                                         library=seen["libs"].get(r.name.split(".")[0]))]
    assert outside == []


def _cuda_build_exempt(records) -> dict:
    """Records whose manual claim a CUDA build of torch cannot show, with why (empty on the CPU build
    torch_npu requires, which the set-up installs): the CUDA software they need is then present, so
    ``import triton`` works and the shim leaves CUDA extension builds to torch, found CUDA toolkit and all."""
    import torch
    import torch.utils.cpp_extension as ext

    if torch.version.cuda is None:
        return {}
    exempt = {}
    for r in records:
        if r.verdict != MANUAL:
            continue
        if getattr(r, "expect", None) == "CUDAExtensionUnsupported" and ext.CUDA_HOME is not None:
            exempt[r.name] = f"a CUDA toolkit is found ({ext.CUDA_HOME})"
        elif r.example == f"import {r.name}" and _importable(r.name):
            exempt[r.name] = f"{r.name} is installed beside this CUDA build of torch"
    return exempt


def _importable(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a dotted name whose parent is missing
        return False


def test_library_examples_under_the_simulator(tmp_path):
    ranged = sorted({r.name.split(".")[0] for r in libraries.RECORDS if r.versions.library})
    got = run_examples({_VERSIONS: _versions_probe(ranged), **{r.name: r.example for r in libraries.RECORDS}},
                        tmp_path)
    _assert_examples_apply(libraries.RECORDS, got)
    exempt = _cuda_build_exempt(libraries.RECORDS)
    wrong = {}
    for r in libraries.RECORDS:
        if r.name in exempt:
            continue
        if r.verdict == MANUAL:
            ok = got[r.name].startswith("raised:")
        elif r.verdict == PARTIAL:  # runs on the npu, and the documented difference shows
            ok = got[r.name] == f"ran:{r.expect}" and r.expect.startswith("npu ")
        else:
            ok = got[r.name] == "ran:npu"
        if not ok:
            wrong[r.name] = (r.verdict, got[r.name])
    assert wrong == {}


def test_construct_examples_under_the_simulator(tmp_path):
    """auto: runs and lands on npu; partial: runs and prints the documented difference; manual: the
    example raises the documented error; the advised edit (where a snippet can show it) runs."""
    examples = {_VERSIONS: _versions_probe([]), **{r.name: r.example for r in CONSTRUCTS}}
    examples.update({r.name + " (fixed)": r.fixed for r in CONSTRUCTS if r.fixed})
    got = run_examples(examples, tmp_path)
    _assert_examples_apply(CONSTRUCTS, got)
    exempt = _cuda_build_exempt(CONSTRUCTS)
    wrong = {}
    for r in CONSTRUCTS:
        if r.name in exempt:
            continue
        if r.verdict == MANUAL:
            ok = got[r.name].startswith(f"raised:{r.expect}:")
        else:
            ok = got[r.name] == f"ran:{r.expect}"
            if r.verdict == AUTO and r.kind in ("device", "backend"):
                ok = ok and "npu" in r.expect
        if r.fixed:  # the advised edit runs (for partial records: the difference is gone)
            ok = ok and got[r.name + " (fixed)"] == f"ran:{r.fixed_expect}" != f"ran:{r.expect}"
        if not ok:
            wrong[r.name] = (r.verdict, got[r.name], got.get(r.name + " (fixed)"))
    assert wrong == {}


def _check(tmp_path: Path, source: str):
    p = tmp_path / "sample.py"
    p.write_text(source)
    return scan_file(str(p)).findings


def test_check_rates_env_vars_as_the_shim_handles_them(tmp_path):
    names = [_concrete(r.name) for r in env_vars.RECORDS]
    src = "import os\n" + "".join(f"os.environ[{n!r}] = '1'\n" for n in names)
    found = {f.message.split(":")[0].split()[-1]: f for f in _check(tmp_path, src)}
    for n in names:
        f = found[n]
        rec = env_vars.lookup(n)
        assert f.handling == rec.verdict, n
        assert (f.handling == AUTO) == (n in ENV_MAP), n


def test_check_rates_constructs_as_their_records(tmp_path):
    """check reports each construct's own example under the record's rule with the record's verdict."""
    wrong = {}
    for r in CONSTRUCTS:
        got = {(f.rule, f.handling) for f in _check(tmp_path, r.example)}
        if r.rule is None:  # check does not report it, for the reason the record states
            if got or not r.unreported:
                wrong[r.name] = (None, r.unreported, sorted(got))
        elif {h for rule, h in got if rule == r.rule} != {r.verdict}:
            wrong[r.name] = (r.rule, r.verdict, sorted(got))
    assert wrong == {}
    unreported = {r.name: r.unreported for r in CONSTRUCTS if r.rule is None}
    assert list(unreported) == ["BuildExtension", 'torch.compile(model, backend="aot_eager")']
    assert all("nothing needs an edit" in why for why in unreported.values())
    with pytest.raises(ValueError, match="says why"):
        Construct("device", "x", None, AUTO, None, "r", "use it.", "print('npu')", "npu")


def test_migrate_applies_each_records_rewrite():
    from ascend_compat.analysis.migrate.transform import migrate_source

    def norm(text: str) -> str:
        return text.replace('"', "'")

    for r in CONSTRUCTS:
        if r.rewrite:
            new = norm(migrate_source(r.example).code)
            before, after = (norm(t) for t in r.rewrite)
            assert after in new and before not in new, (r.name, new)
    for r in env_vars.RECORDS:
        if r.rewrite:
            new = migrate_source(f"import os\nos.environ[{r.name!r}] = '0'\n").code
            assert f"os.environ[{r.ascend!r}]" in new, r.name


def test_shim_translation_is_the_records_rewrite():
    from ascend_compat.cuda_shim import devices as shim_devices

    for r in backends.RECORDS:
        if r.rewrite:
            before, after = (t.strip('"') for t in r.rewrite)
            assert shim_devices.translate_backend(before) == after == backends.rewrite(before), r.name
    for r in devices.RECORDS:
        if r.rewrite and r.rewrite[0].startswith('"'):
            before, after = (t.strip('"') for t in r.rewrite)
            assert shim_devices.translate(before) == after == devices.rewrite(before), r.name
    assert shim_devices.translate("ckpt_cuda.pt") == "ckpt_cuda.pt"


def test_check_rates_libraries_as_their_records(tmp_path):
    src = "".join(f"import {r.name}\n" for r in libraries.RECORDS)
    found = _check(tmp_path, src)
    # auto records are device-generic libraries: importing them is no CUDA use
    assert {f.line: f.handling for f in found} == {i + 1: r.verdict for i, r in enumerate(libraries.RECORDS)
                                                   if r.verdict != AUTO}


def test_advice_texts_follow_one_sentence_form():
    """Every advice sentence generated from the records and every rule's catalogue suggestion: a verb
    or a capital first, one full stop at the end, no placeholder, no word twice in a row; reasons
    print as given."""
    advice = [r.advice for r in libraries.RECORDS + env_vars.RECORDS + CONSTRUCTS + cuda_names.RECORDS + libraries.SWITCHES]
    advice += [r.suggestion for r in RULES.values()]
    bad = {t: advice_problems(t) for t in advice if advice_problems(t)}
    assert bad == {}
    texts = [r.reason for r in env_vars.RECORDS + CONSTRUCTS + cuda_names.RECORDS + libraries.SWITCHES]
    texts += [r.what for r in libraries.RECORDS]
    texts += [r.explanation for r in RULES.values()] + [extensions.refusal("x")]
    bad = {t: placeholder_problems(t) for t in texts if placeholder_problems(t)}
    assert bad == {}


def _corpus() -> list[Path]:
    """Python files check reports much in: the advice sample, the analysis golden corpus and scripts."""
    tests = Path(__file__).resolve().parents[1]
    return [Path(__file__).parent / "advice_sample.py", *sorted((tests / "analysis" / "fixtures").rglob("*.py"))]


def test_every_finding_suggestion_is_one_sentence(tmp_path):
    """What check prints after "->" (and migrate writes into its TODO notes) has the advice form, for
    every finding on the corpus and on every record's example."""
    findings = [f for path in _corpus() for f in scan_file(str(path)).findings]
    sources = [r.example for r in CONSTRUCTS + libraries.RECORDS if r.example]
    sources += ["import torch\n" + "".join(f"torch.cuda.{r.name}\n" for r in cuda_names.RECORDS)]
    sources += ["import os\n" + "".join(f"os.environ[{_concrete(r.name)!r}] = '1'\n" for r in env_vars.RECORDS)]
    for src in sources:
        findings += _check(tmp_path, src)
    assert len({f.rule for f in findings}) >= len(RULES) - 2  # nearly every rule speaks
    bad = {(f.rule, f.suggestion): advice_problems(f.suggestion) for f in findings if advice_problems(f.suggestion)}
    assert bad == {}


@pytest.mark.parametrize("text, problem", [
    ("use torch.npu.<name>", "placeholder"), ("use the the NPU.", "repeated"), ("use it", "full stop"),
    ("it is fine.", "not a verb or a capital"), ("use it..", "full stop"),
])
def test_advice_form_checker_catches(text, problem):
    assert any(problem in p for p in advice_problems(text))


def test_findings_advice_has_no_placeholders(tmp_path):
    src = (Path(__file__).parent / "advice_sample.py").read_text()
    findings = _check(tmp_path, src)
    assert findings
    bad = [(f.rule, f.suggestion, placeholder_problems(f.suggestion)) for f in findings
           if placeholder_problems(f.suggestion)]
    assert bad == []
    suggestions = {f.rule: set() for f in findings}
    for f in findings:
        suggestions[f.rule].add(f.suggestion)
    # one construct, one piece of advice: GradScaler is not advised two ways, and as migrate writes it
    amp = [s for s in suggestions.get("cuda-amp", ()) if "GradScaler" in s]
    assert len(amp) <= 1 and all("torch.npu.amp.GradScaler" in s for s in amp)


def test_version_ranges_are_evaluated_by_the_version_parser():
    from ascend_compat._versions import VersionError
    from ascend_compat.knowledge import Versions

    torch_nccl = env_vars.BY_NAME["TORCH_NCCL_ASYNC_ERROR_HANDLING"].versions
    assert torch_nccl.applies(torch="2.13.0+cpu") and torch_nccl.applies(torch="2.2.0")
    assert not torch_nccl.applies(torch="2.1.0") and env_vars.BY_NAME["NCCL_ASYNC_ERROR_HANDLING"].versions.applies(
        torch="2.1.0")
    ds = libraries.BY_NAME["deepspeed"].versions
    assert ds.applies(library="0.19.8") and not ds.applies(library="0.9.5") and ds.applies()
    assert not libraries.BY_NAME["flash_attn"].versions.applies(library="3.0.0b1")
    int_device = devices.BY_NAME["integer device ordinal"].versions
    assert int_device.applies(torch="2.5.1") and not int_device.applies(torch="2.4.0")
    assert backends.BY_NAME['"cuda:nccl,cpu:gloo"'].versions.applies(torch="2.0.1", torch_npu="2.1.0.post17")
    with pytest.raises(VersionError, match="bad version specifier"):
        Versions(torch="~2")


def test_every_version_range_is_a_specifier_set():
    from packaging.specifiers import SpecifierSet

    records = env_vars.RECORDS + libraries.RECORDS + CONSTRUCTS
    for r in records:
        for spec in (r.versions.torch, r.versions.torch_npu, r.versions.library):
            assert str(SpecifierSet(spec)) == str(SpecifierSet(str(SpecifierSet(spec))))
    assert sum(bool(r.versions.torch or r.versions.library or r.versions.torch_npu) for r in records) >= 8


@pytest.mark.parametrize("verdict", [AUTO, PARTIAL, MANUAL])
def test_verdicts_are_known(verdict):
    assert any(r.verdict == verdict for r in env_vars.RECORDS)


def test_check_advises_the_amp_form_migrate_writes(tmp_path):
    """Was: check advised torch.amp.GradScaler('npu') where migrate wrote torch.npu.amp.GradScaler."""
    from ascend_compat.analysis.migrate.transform import migrate_source

    src = "import torch\ns = torch.cuda.amp.GradScaler()\nwith torch.cuda.amp.autocast():\n    pass\n"
    written = migrate_source(src).code
    for f in _check(tmp_path, src):
        name = f.message.split(":")[0]  # torch.cuda.amp.GradScaler
        npu = name.replace("torch.cuda.", "torch.npu.")
        assert f.suggestion == f"use {npu}.", f.suggestion
        assert npu + "(" in written, written
