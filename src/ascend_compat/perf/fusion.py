"""Fused-op advice: find the hand-written forms of the fused ops torch_npu provides in the recorded
data flow (the rules and their replacements are facts of the knowledge layer,
:mod:`ascend_compat.knowledge.fusion`), and optimizers that could run fused.

A chain matches when each of its ops consumes the previous one's output (views, copies and dtype casts
in between passed through), among the forward ops of one step. One finding per rule: at the line of
the most frequent match (the anchor op of the chain), with the number of matches per step, the other
lines, the replacement call and the first torch_npu release that has the fused op.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Dict, List, Optional, Tuple

from ascend_compat.knowledge import fusion
from ascend_compat.perf.events import OpEvent, StepRecord
from ascend_compat.perf.report import Finding

#: how many ops a ``*`` element takes at most, how deep the walker passes through views and copies
_MAX_REPEAT, _MAX_PASS = 3, 6


def _base(name: str) -> str:
    """``"aten::add_.Tensor"`` -> ``"add"``: the op's base name, in-place or not."""
    base = name.split("::", 1)[-1].split(".")[0]
    return base[:-1] if base.endswith("_") and not base.startswith("_") else base


def _element(text: str) -> Tuple[frozenset, str]:
    """``"mul|div*"`` -> ({"mul", "div"}, "*")."""
    quantifier = text[-1] if text[-1] in "?*" else ""
    return frozenset(text.rstrip("?*").split("|")), quantifier


class _Graph:
    """The forward events of one step and who consumes whose output."""

    def __init__(self, events: List[OpEvent]) -> None:
        self.events = events
        self.by_seq = {e.seq: e for e in events}
        self.consumers: Dict[int, List[OpEvent]] = defaultdict(list)
        for e in events:
            for seq in dict.fromkeys(e.inputs):
                if seq in self.by_seq:
                    self.consumers[seq].append(e)

    def next_ops(self, event: OpEvent, names: frozenset, direct: bool = False) -> List[OpEvent]:
        """Consumers of ``event``'s output named in ``names``, passing through views and copies unless
        ``direct``."""
        found, frontier, seen = [], [event], {event.seq}
        for _ in range(1 if direct else _MAX_PASS):
            following = []
            for e in frontier:
                for c in self.consumers.get(e.seq, ()):
                    if c.seq in seen:
                        continue
                    seen.add(c.seq)
                    base = _base(c.name)
                    if base in names:
                        found.append(c)
                    elif base in fusion.PASS_THROUGH or "view" in c.tags:
                        following.append(c)
            if not following:
                break
            frontier = following
        return found


def _match(graph: _Graph, start: OpEvent, chain: Tuple[Tuple[frozenset, str], ...],
           direct: bool = False) -> Optional[List[OpEvent]]:
    """The events of ``chain`` starting at ``start`` (which matches its first element), or None."""
    def walk(event: OpEvent, i: int) -> Optional[List[OpEvent]]:
        if i == len(chain):
            return []
        names, quantifier = chain[i]
        if quantifier:  # optional or repeated: try skipping it first only after trying to take it
            taken = _take(event, i, names, quantifier)
            if taken is not None:
                return taken
            return walk(event, i + 1)
        for nxt in graph.next_ops(event, names, direct):
            rest = walk(nxt, i + 1)
            if rest is not None:
                return [nxt] + rest
        return None

    def _take(event: OpEvent, i: int, names: frozenset, quantifier: str) -> Optional[List[OpEvent]]:
        limit = 1 if quantifier == "?" else _MAX_REPEAT
        path: List[OpEvent] = []
        current = event
        for _ in range(limit):
            options = graph.next_ops(current, names, direct)
            if not options:
                break
            current = options[0]
            path.append(current)
            rest = walk(current, i + 1)
            if rest is not None:
                return path + rest
        return None

    first_names, _ = chain[0]
    if _base(start.name) not in first_names:
        return None
    rest = walk(start, 1)
    return None if rest is None else [start] + rest


def _chains(rule: fusion.FusionRule):
    return [tuple(_element(text) for text in chain) for chain in rule.chains]


def _where(events: List[OpEvent]) -> str:
    lines = sorted({e.site[1] for e in events if e.site})
    if not lines:
        return ""
    return f"line {lines[0]}" if len(lines) == 1 else f"lines {lines[0]}-{lines[-1]}"


def _version_text(op: str) -> str:
    version = fusion.available_from(op)
    if version is None:
        return "no torch_npu release with op tables has it"
    from ascend_compat import data

    oldest = data.native_op_versions()[0]
    return (f"torch_npu {version} and later" if version != oldest else
            f"every torch_npu release from {oldest} (the oldest with op tables) on")


def fused_ops(record: StepRecord) -> List[Finding]:
    """One finding per fusion rule that matches the recorded forward ops."""
    n = record.n_steps
    by_step: Dict[int, List[OpEvent]] = defaultdict(list)
    for e in record.events:
        if (e.seq >= 0 and "backward" not in e.tags and "inner" not in e.tags
                and (e.kind != "other" or "composite" in e.tags)):
            by_step[e.step].append(e)
    graphs = [_Graph(events) for _, events in sorted(by_step.items())]
    out: List[Finding] = []
    claimed: set = set()  # events already explained by an earlier rule (gelu inside a GeGLU)
    for rule in fusion.RULES:
        chains = _chains(rule)
        matches: List[List[OpEvent]] = []
        for graph in graphs:
            used: set = set()
            for start in graph.events:
                if start.seq in used or start.seq in claimed:
                    continue
                for chain in chains:
                    found = _match(graph, start, chain, rule.direct)
                    if found is not None and not (set(e.seq for e in found) & claimed):
                        matches.append(found)
                        used.update(e.seq for e in found)
                        break
        if not matches:
            continue
        for found in matches:
            claimed.update(e.seq for e in found)
        out.append(_finding(rule, matches, n))
    return out


def _finding(rule: fusion.FusionRule, matches: List[List[OpEvent]], n: int) -> Finding:
    anchors = [m[min(rule.anchor, len(m) - 1)] for m in matches]
    sites = Counter(a.site for a in anchors)
    site = sites.most_common(1)[0][0]
    first = next(m for m, a in zip(matches, anchors) if a.site == site)
    anchor = anchors[matches.index(first)]
    span = _where(first)
    others = sorted(f"{_short(s[0])}:{s[1]}" for s in sites if s and s != site)
    also = f"; also at {', '.join(others[:4])}{' and more' if len(others) > 4 else ''}" if others else ""
    ops = " -> ".join(e.name.split("::", 1)[-1].split(".")[0] for e in first)
    rate = f"{len(matches) / n:g}/step{also}"
    if len(first) == 1:
        title = f"{rule.what}: torch_npu has a faster fused form ({rate})"
    else:
        title = (f"{rule.what} runs as {len(first)} separate ops ({ops}, {span}): torch_npu has it as one fused op "
                 f"({rate})")
    fix = f"use {rule.replacement}; {_version_text(rule.op)} has it"
    if rule.caveat:
        fix += f" ({rule.caveat})"
    return Finding(rule.id, rule.severity, title, fix, anchor.site, anchor.module,
                   {"matches_per_step": len(matches) / n, "kernels_per_match": float(len(first))}, anchor.start_ns)


def fused_optimizers(record: StepRecord) -> List[Finding]:
    """Optimizers that update with several multi-tensor kernels (``foreach``) where one fused kernel
    runs on torch_npu (``single_tensor`` ones are the ``unfused-optimizer`` rule's)."""
    out: List[Finding] = []
    steps = [e for e in record.events if "optimizer" in e.tags and e.kind != "other"]
    if not steps:
        return out
    for spec in fusion.FUSED_OPTIMIZERS:
        if record.optimizers.get(spec.name) != "foreach":
            continue
        if spec.fused_op is not None:
            fix = (f"create it with `fused=True` (`torch.optim.{spec.name}(params, lr=..., fused=True)`: one kernel "
                   f"for every parameter; {_version_text(spec.fused_op)} implements it), or use {spec.npu_class}")
        else:
            fix = f"use {spec.npu_class} (torch_npu's fused {spec.name})"
        mine = [e for e in steps if not e.sync]
        out.append(Finding("fused-optimizer", "low",
                           f"{spec.name} updates the parameters with multi-tensor (foreach) kernels, "
                           f"{len(mine) / record.n_steps:g} per step: a fused optimizer does it in one",
                           fix, mine[0].site if mine else None, "", {"ops_per_step": len(mine) / record.n_steps},
                           mine[0].start_ns if mine else 0))
    return out


def _short(path: str) -> str:
    from ascend_compat.perf.report import _short as short

    return short(path)
