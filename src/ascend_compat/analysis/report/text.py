"""The human report: findings grouped by file (ordered by line), errors, a per-rule table, and a
boxed summary ("Total CUDA references / Migration difficulty / Handled automatically / Needs
attention").

:func:`render` is plain text (files, pipes, golden tests). :func:`render_rich` prints the same
content on a terminal: coloured, tables wrapped to the console width (rich, imported there)."""
from __future__ import annotations

from typing import Iterator, List

from ascend_compat.analysis.rules.catalog import RULES


def _box(rows: List[tuple], title: str) -> List[str]:
    label_w = max(len(a) for a, _ in rows)
    body = [f" {a.ljust(label_w)}   {b} " for a, b in rows]
    width = max(max(len(b) for b in body), len(title) + 4)
    top = "╭─ " + title + " " + "─" * (width - len(title) - 3) + "╮"
    return [top] + ["│" + b.ljust(width) + "│" for b in body] + ["╰" + "─" * width + "╯"]


def render(report: dict, summary_only: bool = False, **_kw) -> str:
    return "".join(render_chunks(report, summary_only))


def render_chunks(report: dict, summary_only: bool = False, **_kw) -> Iterator[str]:
    """The text report line by line (each piece ends with a newline): a report of a million findings is
    written as it is made, never held whole."""
    s = report["summary"]
    if not summary_only:
        for f in report["files"]:
            if not f["findings"]:
                continue
            yield f"{f['path']}  [{f['difficulty']['level']}]\n"
            for x in f["findings"]:
                where = (f"cell {x['cell']} " if x.get("cell") is not None else "") + f"{x['line']}:{x['col']}"
                yield (f"  {where:<10} {x['handling']:<8} {x['rule']:<20} {x['message']}\n"
                       f"  {'':<10} {'':<8} {'':<20} -> {x['suggestion']}\n")
            yield "\n"
        errors = [f for f in report["files"] if f["error"]]
        if errors:
            yield "Not analysed / partly analysed:\n"
            for f in errors:
                yield f"  {f['path']}: {f['error']['kind']}: {f['error']['message']}\n"
            yield "\n"
        if s["by_rule"]:
            yield "By rule:\n"
            hands: dict = {}
            for f in report["files"]:
                for x in f["findings"]:
                    hands.setdefault(x["rule"], set()).add(x["handling"])
            for rule, n in sorted(s["by_rule"].items(), key=lambda kv: (-kv[1], kv[0])):
                r = RULES.get(rule)
                h = "/".join(k for k in ("auto", "partial", "manual") if k in hands.get(rule, ()))
                yield f"  {rule:<20} {n:>5}  {h:<8} {r.title if r else ''}\n"
            yield "\n"
    for line in _box(_summary_rows(s), "ascend-compat check"):
        yield line + "\n"
    for reason in s["difficulty"]["reasons"]:
        yield f"  - {reason}\n"


def _summary_rows(s: dict) -> List[tuple]:
    total = s["total"]
    h = s["by_handling"]
    auto = h.get("auto", 0)
    attention = h.get("partial", 0) + h.get("manual", 0)
    pct = f" ({100 * auto / total:.0f}%)" if total else ""
    return [
        ("Files scanned", f"{s['files_scanned']:,} ({s['lines']:,} lines)"
         + (f", {s['files_with_errors']} not analysed" if s["files_with_errors"] else "")),
        ("Total CUDA references", f"{total:,}" + (f" ({s['suppressed']} suppressed)" if s["suppressed"] else "")),
        ("Migration difficulty", s["difficulty"]["level"].upper()),
        ("Handled automatically", f"{auto:,}{pct}"),
        ("Needs attention", f"{attention:,} ({h.get('partial', 0)} partial, {h.get('manual', 0)} manual)"),
    ]


_STYLE = {"auto": "green", "partial": "yellow", "manual": "bold red", "none": "green", "easy": "green",
          "moderate": "yellow", "hard": "bold red"}


def render_rich(report: dict, console, summary_only: bool = False) -> None:
    """Print the report on a rich ``console``: same content as :func:`render`, coloured and wrapped."""
    from rich import box
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table

    s = report["summary"]
    if not summary_only:
        for f in report["files"]:
            if not f["findings"]:
                continue
            level = f["difficulty"]["level"]
            console.print(f"[bold]{escape(f['path'])}[/]  [{_STYLE[level]}]{level}[/]")
            t = Table(box=None, show_header=False, pad_edge=False, padding=(0, 1, 0, 2), expand=False)
            t.add_column(no_wrap=True)
            t.add_column(no_wrap=True)
            t.add_column(no_wrap=True, style="cyan")
            t.add_column(overflow="fold", ratio=1)
            for x in f["findings"]:
                where = (f"cell {x['cell']} " if x.get("cell") is not None else "") + f"{x['line']}:{x['col']}"
                t.add_row(where, f"[{_STYLE[x['handling']]}]{x['handling']}[/]", x["rule"],
                          f"{escape(x['message'])}\n[dim]-> {escape(x['suggestion'])}[/]")
            console.print(t)
            console.print()
        errors = [f for f in report["files"] if f["error"]]
        if errors:
            console.print("[bold red]Not analysed / partly analysed:[/]")
            for f in errors:
                console.print(f"  {escape(f['path'])}: [red]{escape(f['error']['kind'])}[/]: "
                              f"{escape(f['error']['message'])}", soft_wrap=False)
            console.print()
        if s["by_rule"]:
            t = Table(title="By rule", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
            t.add_column("rule", style="cyan", no_wrap=True)
            t.add_column("count", justify="right")
            t.add_column("handling", no_wrap=True)
            t.add_column("title", overflow="fold")
            hands: dict = {}
            for f in report["files"]:
                for x in f["findings"]:
                    hands.setdefault(x["rule"], set()).add(x["handling"])
            for rule, n in sorted(s["by_rule"].items(), key=lambda kv: (-kv[1], kv[0])):
                r = RULES.get(rule)
                h = "/".join(f"[{_STYLE[k]}]{k}[/]" for k in ("auto", "partial", "manual") if k in hands.get(rule, ()))
                t.add_row(rule, f"{n:,}", h, escape(r.title) if r else "")
            console.print(t)
    grid = Table.grid(padding=(0, 3))
    grid.add_column(style="bold")
    grid.add_column()
    level = s["difficulty"]["level"]
    for label, value in _summary_rows(s):
        if label == "Migration difficulty":
            value = f"[{_STYLE[level]}]{value}[/]"
        else:
            value = escape(value)
        grid.add_row(label, value)
    console.print(Panel(grid, title="ascend-compat check", title_align="left", expand=False))
    reasons = Table.grid(padding=(0, 1, 0, 0))
    reasons.add_column(no_wrap=True)
    reasons.add_column(overflow="fold")
    for reason in s["difficulty"]["reasons"]:
        reasons.add_row("  -", escape(reason))
    console.print(reasons)
