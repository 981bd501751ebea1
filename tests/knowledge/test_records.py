"""The knowledge records are executable claims, and check and the shim read the same records.

Each record's example runs under ``ascend-compat run --simulate`` (all examples of one kind in one
subprocess, each isolated and reported as JSON): auto environment variables must reach their Ascend
name, variables the shim does not translate must stay untouched, drop-in libraries must run on the
npu device, and manual libraries must fail (the import, or the first use).
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ascend_compat.analysis.rules.catalog import RULES
from ascend_compat.analysis.scan import scan_file
from ascend_compat.cuda_shim.mapping.env_vars import ENV_MAP
from ascend_compat.knowledge import AUTO, MANUAL, PARTIAL, env_vars, libraries
from ascend_compat.knowledge.records import advice_problems

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cuda_shim"))
from shim_helpers import REPO, clean_env  # noqa: E402


def _run_simulated(script: str, tmp_path: Path, **env: str) -> dict:
    path = tmp_path / "examples.py"
    path.write_text(textwrap.dedent(script))
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "run", "--simulate", str(path)],
                          capture_output=True, text=True, timeout=600, env=clean_env(**env), cwd=str(REPO))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _concrete(name: str) -> str:
    return name[:-1] + "EXAMPLE" if name.endswith("*") else name


def test_every_record_has_an_example():
    missing = [r.name for r in libraries.RECORDS if not r.example]
    missing += [r.name for r in env_vars.RECORDS if r.shim_maps and r.example is None
                and r.name != "PYTORCH_ALLOC_CONF"]
    assert missing == []


def test_env_var_examples_under_the_simulator(tmp_path):
    auto = [r for r in env_vars.RECORDS if r.shim_maps and r.example]
    # two records that map to the same Ascend name cannot be proven in one process
    by_target: dict[str, list] = {}
    for r in auto:
        by_target.setdefault(r.ascend, []).append(r)
    rounds = max(len(v) for v in by_target.values())
    untranslated = [r for r in env_vars.RECORDS if not r.shim_maps]
    for i in range(rounds):
        batch = [v[i] for v in by_target.values() if len(v) > i]
        env = {r.name: r.example[0] for r in batch}
        env.update({_concrete(r.name): "1" for r in untranslated if r.ascend is None or r.rule != "cuda-extension"})
        watched = sorted({r.ascend for r in env_vars.RECORDS if r.ascend})
        got = _run_simulated(f"""
            import json, os, torch
            assert torch.ones(1).cuda().device.type == "npu"
            print(json.dumps({{k: os.environ.get(k) for k in {watched!r}}}))
            """, tmp_path, **env)
        for r in batch:
            assert got[r.ascend] == r.example[1], r.name
        for r in untranslated:
            if r.ascend and r.ascend not in {b.ascend for b in batch}:
                assert got[r.ascend] is None, f"{r.name} must not be translated to {r.ascend}"


def test_library_examples_under_the_simulator(tmp_path):
    examples = {r.name: r.example for r in libraries.RECORDS}
    got = _run_simulated(f"""
        import contextlib, io, json
        out = {{}}
        for name, code in {examples!r}.items():
            buf = io.StringIO()
            try:
                with contextlib.redirect_stdout(buf):
                    exec(compile(code, name, "exec"), {{}})
                out[name] = "ran:" + buf.getvalue().strip()
            except ImportError as e:
                out[name] = "ImportError"
            except Exception as e:
                out[name] = type(e).__name__ + ": " + str(e)[:200]
        print(json.dumps(out))
        """, tmp_path)
    wrong = {}
    for r in libraries.RECORDS:
        ok = not got[r.name].startswith("ran:") if r.verdict == MANUAL else got[r.name].startswith("ran:") and got[r.name].endswith("npu")
        if not ok:
            wrong[r.name] = (r.verdict, got[r.name])
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


def test_check_rates_libraries_as_their_records(tmp_path):
    src = "".join(f"import {r.name}\n" for r in libraries.RECORDS)
    found = _check(tmp_path, src)
    assert {f.line: f.handling for f in found} == {i + 1: r.verdict for i, r in enumerate(libraries.RECORDS)}


def test_advice_texts_follow_one_sentence_form(tmp_path):
    texts = [r.replacement for r in libraries.RECORDS] + [r.advice for r in env_vars.RECORDS]
    texts += [r.reason for r in env_vars.RECORDS] + [r.suggestion for r in RULES.values()]
    bad = {t: advice_problems(t) for t in texts if advice_problems(t)}
    assert bad == {}
    for r in libraries.RECORDS:
        assert r.replacement.split()[0] in ("use", "keep", "port", "replace", "install", "run"), r.name


def test_findings_advice_has_no_placeholders(tmp_path):
    src = (Path(__file__).parent / "advice_sample.py").read_text()
    findings = _check(tmp_path, src)
    assert findings
    bad = [(f.rule, f.suggestion, advice_problems(f.suggestion)) for f in findings if advice_problems(f.suggestion)]
    assert bad == []
    suggestions = {f.rule: set() for f in findings}
    for f in findings:
        suggestions[f.rule].add(f.suggestion)
    # one construct, one piece of advice: GradScaler is not advised two ways
    amp = [s for s in suggestions.get("cuda-amp", ()) if "GradScaler" in s]
    assert len(amp) <= 1 and all("torch.amp.GradScaler" in s for s in amp)


@pytest.mark.parametrize("verdict", [AUTO, PARTIAL, MANUAL])
def test_verdicts_are_known(verdict):
    assert any(r.verdict == verdict for r in env_vars.RECORDS)


def test_check_and_the_shim_agree_on_every_torch_cuda_name():
    from ascend_compat.analysis.rules.cuda_api import status
    from ascend_compat.knowledge import cuda_names as table

    wrong = {}
    for name, (st, _) in table.CUDA_NAMES.items():
        got = status(name).handling
        if (st == table.UNSUPPORTED) != (got == MANUAL):
            wrong[name] = (st, got)
    assert wrong == {}
