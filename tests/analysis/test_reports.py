"""Report formats: JSON schema (golden), SARIF 2.1.0 structure (golden), CSV, text, CLI exit codes."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

from ascend_compat.analysis.report import render
from ascend_compat.analysis.report.schema import SCHEMA_VERSION, build
from ascend_compat.analysis.scan import scan_paths

from analysis_helpers import CORPUS

FINDING_KEYS = {"path", "line", "col", "end_line", "end_col", "rule", "category", "handling", "message", "suggestion"}


def _report(paths=(CORPUS,)):
    return build(scan_paths(list(paths), jobs=1).files)


def test_json_schema_golden():
    rep = json.loads(render("json", _report()))
    assert set(rep) == {"schema", "schema_version", "tool", "torch_npu_version", "summary", "files"}
    assert rep["schema"] == "ascend-compat/check" and rep["schema_version"] == SCHEMA_VERSION == "1.1"
    s = rep["summary"]
    assert set(s) == {"files_scanned", "files_with_findings", "files_with_errors", "files_skipped", "lines", "total",
                      "by_handling", "by_rule", "by_category", "suppressed", "difficulty"}
    assert set(s["by_handling"]) == {"auto", "partial", "manual"}
    assert s["total"] == sum(s["by_handling"].values()) == sum(s["by_rule"].values())
    assert s["difficulty"]["level"] == "hard" and s["difficulty"]["reasons"]
    for f in rep["files"]:
        assert set(f) == {"path", "kind", "lines", "difficulty", "error", "suppressed", "findings"}
        for x in f["findings"]:
            assert FINDING_KEYS <= set(x) <= FINDING_KEYS | {"cell"}
    errs = {os.path.basename(f["path"]): f["error"]["kind"] for f in rep["files"] if f["error"]}
    assert errs == {"syntax_error.py": "parse-error", "bad_encoding.py": "undecodable"}


def test_sarif_structure_golden():
    doc = json.loads(render("sarif", _report()))
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-2.1.0.json")
    run, = doc["runs"]
    rules = run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids))
    for r in rules:
        assert {"id", "shortDescription", "fullDescription", "defaultConfiguration"} <= set(r)
        assert r["defaultConfiguration"]["level"] in ("note", "warning", "error")
    for res in run["results"]:
        assert ids[res["ruleIndex"]] == res["ruleId"]
        assert res["level"] in ("note", "warning", "error") and res["message"]["text"]
        region = res["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1 and region["endLine"] >= region["startLine"]
        uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert "\\" not in uri and not uri.startswith("./")
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert len(notes) == 2


def test_csv_rows_match_findings():
    rep = _report()
    rows = list(csv.DictReader(io.StringIO(render("csv", rep))))
    n_err = sum(1 for f in rep["files"] if f["error"])
    assert len(rows) == rep["summary"]["total"] + n_err
    assert rows[0].keys() >= {"path", "line", "rule", "handling", "suggestion"}


def test_text_report_box_and_grouping():
    out = render("text", _report([os.path.join(CORPUS, "aliases.py")]))
    assert "╭─ ascend-compat check" in out and "╰" in out
    for label in ("Total CUDA references", "Migration difficulty", "Handled automatically", "Needs attention"):
        assert label in out
    assert "aliases.py  [" in out and '-> use "npu"' in out


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ascend_compat", *args], capture_output=True, text=True, cwd=cwd)


def test_cli_fail_on_and_output(tmp_path):
    easy = os.path.join(CORPUS, "suppressed.py")
    assert _cli("check", easy, "--fail-on", "moderate").returncode == 0
    assert _cli("check", easy, "--fail-on", "any").returncode == 1
    assert _cli("check", CORPUS, "--fail-on", "hard").returncode == 1
    out = tmp_path / "r.sarif"
    p = _cli("check", CORPUS, "--format", "sarif", "--output", str(out))
    assert p.returncode == 0 and p.stdout == "" and json.loads(out.read_text())["version"] == "2.1.0"
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind
    assert "scanning" not in p.stderr  # no progress bar when stderr is not a terminal


def test_realistic_script_report_is_actionable():
    from analysis_helpers import SCRIPTS

    rep = _report([os.path.join(SCRIPTS, "llm_finetune.py")])
    s = rep["summary"]
    assert s["difficulty"]["level"] == "moderate"
    rules = {(x["line"], x["rule"], x["handling"]) for x in rep["files"][0]["findings"]}
    assert {(6, "cuda-library", "partial"), (11, "float64", "partial"), (30, "nccl-backend", "auto"),
            (33, "device-capability", "partial"), (45, "reduce-op-avg", "partial")} <= rules
    assert not any(x["line"] == 48 for x in rep["files"][0]["findings"])  # torch.save is fine
