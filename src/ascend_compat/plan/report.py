"""A plan as text for the terminal and as a self-contained HTML page with the memory timeline."""
from __future__ import annotations

import html
from typing import List

from ascend_compat.simulator.caching_allocator import format_size


def _gib(n) -> str:
    return f"{(n or 0) / 2**30:.2f} GiB"


def text(result) -> str:
    lines: List[str] = []
    verdict = "fits" if result.fits else "does NOT fit"
    lines.append(f"plan: {result.world} rank(s) on {result.soc} ({_gib(result.device_memory)} per NPU): {verdict}")
    if result.world > 1:
        others = "" if len(result.planned_ranks) == result.world else " (other ranks as rank 0)"
        lines.append(f"  planned ranks: {', '.join(map(str, result.planned_ranks))}{others}")
    for r in result.ranks:
        lines.append(f"rank {r['rank']}: peak allocated {_gib(r['peak_allocated'])}, reserved {_gib(r['peak_reserved'])}")
        if r.get("peak_op"):
            lines.append(f"  peak at {r['peak_op']} in {r['peak_module'] or '(no module)'} ({r['peak_phase']}), "
                         f"{r['peak_site']}")
        live = r.get("live_at_peak") or {}
        parts = [f"{k} {_gib(v)}" for k, v in live.items() if v]
        if parts:
            lines.append("  live at the peak: " + ", ".join(parts))
        if r.get("oom"):
            lines.append(f"  OOM at {r['oom_op']} in {r['oom_module'] or '(no module)'}, {r['oom_site']}:")
            lines.append(f"    {r['oom']}")
        if r.get("step_time_s"):
            kinds = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in r["time_by_kind"].items() if v)
            mfu = f", MFU {r['mfu'] * 100:.1f}%" if r.get("mfu") else ""
            hidden = r.get("communication_hidden_s")
            hidden = f", {hidden * 1e3:.1f} ms of communication behind backward compute" if hidden else ""
            lines.append(f"  step time ~{r['step_time_s'] * 1e3:.1f} ms ({kinds}{hidden}){mfu}")
            top = sorted(r["time_by_module"].items(), key=lambda kv: -kv[1])[:5]
            lines.append("  by module: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in top))
        for kind, c in (r.get("collectives") or {}).items():
            lines.append(f"  collective {kind}: {c['count']} x, {format_size(c['bytes'])} over {c['group']} ranks")
    if result.suggestions and not result.fits:
        lines.append("to make it fit (estimated):")
        for s in result.suggestions:
            mark = "fits" if s["fits"] else "does not fit"
            lines.append(f"  - {s['suggestion']}: ~{_gib(s['estimated_peak_reserved'])} reserved ({mark}); {s['how']}")
    return "\n".join(lines) + "\n"


def timeline_html(result) -> str:
    """One SVG chart per planned rank: allocated and reserved memory over the allocation events, the
    device capacity, the peak and the OOM point."""
    charts = []
    for r in result.ranks:
        charts.append(_svg(r, result.device_memory))
    body = "\n".join(charts)
    title = f"ascend-compat plan: {result.world} rank(s) on {result.soc}"
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            "<style>body{font-family:sans-serif;margin:2em} .k{font-size:12px}</style></head><body>"
            f"<h1>{html.escape(title)}</h1><pre>{html.escape(text(result))}</pre>{body}</body></html>\n")


def _svg(r: dict, capacity: int) -> str:
    pts = r.get("timeline") or []
    w, h, pad = 900, 300, 50
    if not pts:
        return f"<h2>rank {r['rank']}</h2><p>no device allocations</p>"
    xmax = max(p[0] for p in pts) or 1
    ymax = max(max(p[2] for p in pts), capacity if capacity < 4 * max(p[2] for p in pts) else 0) or 1

    def xy(i, v):
        return pad + (w - 2 * pad) * i / xmax, h - pad - (h - 2 * pad) * v / ymax

    def line(col, color):
        coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(p[0], p[col]) for p in pts))
        return f"<polyline fill='none' stroke='{color}' stroke-width='1.5' points='{coords}'/>"

    parts = [f"<h2>rank {r['rank']}</h2><svg width='{w}' height='{h}' xmlns='http://www.w3.org/2000/svg'>",
             f"<rect x='{pad}' y='{pad}' width='{w - 2 * pad}' height='{h - 2 * pad}' fill='none' stroke='#ccc'/>",
             line(2, "#e67e22"), line(1, "#2c3e50")]
    if capacity <= ymax:
        _, y = xy(0, capacity)
        parts.append(f"<line x1='{pad}' x2='{w - pad}' y1='{y:.1f}' y2='{y:.1f}' stroke='red' stroke-dasharray='4'/>"
                     f"<text class='k' x='{pad + 4}' y='{y - 4:.1f}' fill='red'>device {_gib(capacity)}</text>")
    phases, last = [], None
    for p in pts:
        if p[3] != last:
            phases.append((p[0], p[3]))
            last = p[3]
    for i, name in phases:
        x, _ = xy(i, 0)
        parts.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{pad}' y2='{h - pad}' stroke='#ddd'/>"
                     f"<text class='k' x='{x + 2:.1f}' y='{h - pad + 14}' fill='#888'>{html.escape(name[:3])}</text>")
    parts.append(f"<text class='k' x='{pad}' y='{pad - 8}'>allocated (dark) and reserved (orange), max "
                 f"{_gib(ymax)}; x: allocation events</text></svg>")
    return "".join(parts)
