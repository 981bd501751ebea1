"""The human report: findings grouped by file (ordered by line), errors, a per-rule table, and a
boxed summary ("Total CUDA references / Migration difficulty / Handled automatically / Needs
attention"). Plain text with box-drawing characters; no colour, no dependencies."""
from __future__ import annotations

from typing import List

from ascend_compat.analysis.rules.catalog import RULES


def _box(rows: List[tuple], title: str) -> List[str]:
    label_w = max(len(a) for a, _ in rows)
    body = [f" {a.ljust(label_w)}   {b} " for a, b in rows]
    width = max(max(len(b) for b in body), len(title) + 4)
    top = "╭─ " + title + " " + "─" * (width - len(title) - 3) + "╮"
    return [top] + ["│" + b.ljust(width) + "│" for b in body] + ["╰" + "─" * width + "╯"]


def render(report: dict, summary_only: bool = False, **_kw) -> str:
    out: List[str] = []
    s = report["summary"]
    if not summary_only:
        for f in report["files"]:
            if not f["findings"]:
                continue
            out.append(f"{f['path']}  [{f['difficulty']['level']}]")
            for x in f["findings"]:
                where = (f"cell {x['cell']} " if x.get("cell") is not None else "") + f"{x['line']}:{x['col']}"
                out.append(f"  {where:<10} {x['handling']:<8} {x['rule']:<20} {x['message']}")
                out.append(f"  {'':<10} {'':<8} {'':<20} -> {x['suggestion']}")
            out.append("")
        errors = [f for f in report["files"] if f["error"]]
        if errors:
            out.append("Not analysed / partly analysed:")
            for f in errors:
                out.append(f"  {f['path']}: {f['error']['kind']}: {f['error']['message']}")
            out.append("")
        if s["by_rule"]:
            out.append("By rule:")
            hands: dict = {}
            for f in report["files"]:
                for x in f["findings"]:
                    hands.setdefault(x["rule"], set()).add(x["handling"])
            for rule, n in sorted(s["by_rule"].items(), key=lambda kv: (-kv[1], kv[0])):
                r = RULES.get(rule)
                h = "/".join(k for k in ("auto", "partial", "manual") if k in hands.get(rule, ()))
                out.append(f"  {rule:<20} {n:>5}  {h:<8} {r.title if r else ''}")
            out.append("")
    total = s["total"]
    h = s["by_handling"]
    auto = h.get("auto", 0)
    attention = h.get("partial", 0) + h.get("manual", 0)
    pct = f" ({100 * auto / total:.0f}%)" if total else ""
    rows = [
        ("Files scanned", f"{s['files_scanned']:,} ({s['lines']:,} lines)"
         + (f", {s['files_with_errors']} not analysed" if s["files_with_errors"] else "")),
        ("Total CUDA references", f"{total:,}" + (f" ({s['suppressed']} suppressed)" if s["suppressed"] else "")),
        ("Migration difficulty", s["difficulty"]["level"].upper()),
        ("Handled automatically", f"{auto:,}{pct}"),
        ("Needs attention", f"{attention:,} ({h.get('partial', 0)} partial, {h.get('manual', 0)} manual)"),
    ]
    out.extend(_box(rows, "ascend-compat check"))
    for reason in s["difficulty"]["reasons"]:
        out.append(f"  - {reason}")
    return "\n".join(out) + "\n"
