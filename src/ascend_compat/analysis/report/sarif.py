"""``--format sarif``: SARIF 2.1.0 for code-scanning interfaces (GitHub code scanning and others).

Handling maps to SARIF levels: manual -> error, partial -> warning, auto -> note. Files that could
not be analysed become ``toolExecutionNotifications``. Notebook findings use the notebook path with
the cell in the message and in ``properties.cell`` (SARIF has no cell coordinates).
"""
from __future__ import annotations

import json

from ascend_compat.analysis.rules.catalog import RULES

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"manual": "error", "partial": "warning", "auto": "note"}


def _uri(path: str) -> str:
    p = path.replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    from urllib.parse import quote
    return quote(p, safe="/:")


def render(report: dict, **_kw) -> str:
    rule_ids = list(RULES)
    index = {r: i for i, r in enumerate(rule_ids)}
    rules = [{
        "id": r.id,
        "name": "".join(w.capitalize() for w in r.id.split("-")),
        "shortDescription": {"text": r.title},
        "fullDescription": {"text": r.explanation},
        "help": {"text": f"{r.explanation} Suggestion: {r.suggestion}."},
        "defaultConfiguration": {"level": LEVEL[r.handling]},
        "properties": {"category": r.category, "handling": r.handling},
    } for r in RULES.values()]
    results = []
    notifications = []
    for f in report["files"]:
        for x in f["findings"]:
            region = {"startLine": x["line"], "startColumn": x["col"], "endLine": x["end_line"],
                      "endColumn": max(x["end_col"], x["col"] if x["end_line"] == x["line"] else 1)}
            msg = f"{x['message']} Suggestion: {x['suggestion'].rstrip('.')}."  # record advice ends with one
            props = {"handling": x["handling"], "category": x["category"]}
            if x.get("cell") is not None:
                msg = f"[cell {x['cell']}] " + msg
                props["cell"] = x["cell"]
            results.append({
                "ruleId": x["rule"],
                "ruleIndex": index[x["rule"]],
                "level": LEVEL[x["handling"]],
                "message": {"text": msg},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": _uri(x["path"])},
                    "region": region}}],
                "properties": props,
            })
        if f["error"]:
            notifications.append({
                "level": "warning",
                "message": {"text": f"{f['path']}: {f['error']['kind']}: {f['error']['message']}"},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(f["path"])}}}],
            })
    run = {
        "tool": {"driver": {
            "name": "ascend-compat",
            "version": report["tool"]["version"],
            "informationUri": "https://pypi.org/project/ascend-compat/",
            "rules": rules,
        }},
        "results": results,
        "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notifications}],
        "properties": {"difficulty": report["summary"]["difficulty"]},
    }
    doc = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
