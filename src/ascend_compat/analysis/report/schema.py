"""The one report model all writers use; its JSON form is the documented ``--format json`` schema.

Schema ``ascend-compat/check``, its version in :mod:`ascend_compat._schemas` (SCHEMA.md). Additive changes bump
the minor version; anything that renames, removes or changes the meaning of a field bumps the major version.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Optional

from ascend_compat._schemas import VERSIONS, schema_id
from ascend_compat.analysis.difficulty import rate_all, rate_file
from ascend_compat.analysis.findings import NOT_A_FILE, FileResult

SCHEMA_ID = schema_id("check")
SCHEMA_VERSION = VERSIONS["check"]


def build(results: Iterable[FileResult], torch_npu_version: Optional[str] = None, consume: bool = False) -> dict:
    """The report dict: summary + the files that have findings or errors (in scan order). With ``consume``
    each result's findings are turned into the report's dicts one by one and dropped from the result (so a
    million findings are not held twice; ``check`` needs only the report afterwards)."""
    from ascend_compat._version import __version__

    results = list(results)
    handling, rules, categories, total = Counter(), Counter(), Counter(), 0
    for r in results:
        total += len(r.findings)
        handling.update(f.handling for f in r.findings)
        rules.update(f.rule for f in r.findings)
        categories.update(f.category for f in r.findings)
    with_findings = sum(1 for r in results if r.findings)
    overall = rate_all(results)
    files = []
    for r in results:
        if not r.findings and not r.error:
            continue
        rating = rate_file(r)
        files.append({
            "path": r.path,
            "kind": r.kind,
            "lines": r.lines,
            "difficulty": {"level": rating.level, "reasons": rating.reasons},
            "error": {"kind": r.error_kind, "message": r.error} if r.error else None,
            "suppressed": r.suppressed,
            "findings": _dicts(r, consume),
        })
    return {
        "schema": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "ascend-compat", "version": __version__},
        "torch_npu_version": torch_npu_version,
        "summary": {
            "files_scanned": sum(1 for r in results if r.kind != "unknown"),
            "files_with_findings": with_findings,
            "files_with_errors": sum(1 for r in results if r.not_analysed),
            "files_skipped": sum(1 for r in results if r.error_kind == NOT_A_FILE),
            "lines": sum(r.lines for r in results),
            "total": total,
            "by_handling": {h: handling.get(h, 0) for h in ("auto", "partial", "manual")},
            "by_rule": dict(sorted(rules.items())),
            "by_category": dict(sorted(categories.items())),
            "suppressed": sum(r.suppressed for r in results),
            "difficulty": {"level": overall.level, "reasons": overall.reasons},
        },
        "files": files,
    }


def _dicts(result: FileResult, consume: bool) -> list:
    if not consume:
        return [f.to_dict() for f in result.findings]
    findings, out = result.findings, []
    findings.reverse()
    while findings:
        out.append(findings.pop().to_dict())
    return out
