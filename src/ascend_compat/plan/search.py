"""``--find-max-batch``: the largest value of the script's own batch argument that fits, by search.

Doubles from the value on the command line (or 1) until a plan does not fit, then bisects between the
last fit and the first OOM; each probe is a full plan of the same launch with the argument changed.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple


class BatchArgumentError(ValueError):
    """The script does not take the named argument."""


def with_value(target: Sequence[str], arg: str, value: int) -> List[str]:
    """``target`` with ``arg`` set to ``value`` (``--arg N`` or ``--arg=N``; appended when absent)."""
    out = list(target)
    for i, token in enumerate(out):
        if token == arg and i + 1 < len(out):
            out[i + 1] = str(value)
            return out
        if token.startswith(arg + "="):
            out[i] = f"{arg}={value}"
            return out
    return out + [arg, str(value)]


def current_value(target: Sequence[str], arg: str) -> Optional[int]:
    for i, token in enumerate(target):
        if token == arg and i + 1 < len(target) and target[i + 1].isdigit():
            return int(target[i + 1])
        if token.startswith(arg + "=") and token.split("=", 1)[1].isdigit():
            return int(token.split("=", 1)[1])
    return None


def find_max_batch(target: Sequence[str], arg: str, options: dict, progress: bool = False,
                   limit: int = 1 << 16) -> Tuple[Optional[int], object, List[tuple]]:
    """``(largest fitting value or None, its PlanResult, [(value, fits), ...])``."""
    import sys

    from ascend_compat import plan as planning

    tried: List[tuple] = []
    results = {}

    def probe(v: int) -> bool:
        if progress:
            print(f"plan: trying {arg} {v}", file=sys.stderr, flush=True)
        try:
            res = planning.plan(with_value(target, arg, v), suggest=False, **options)
        except planning.PlanError as exc:
            if exc.kind == "script" and ("status 2" in str(exc) or "unrecognized arguments" in str(exc)):
                raise BatchArgumentError(f"the script does not take {arg} (it exited with a usage error when "
                                         f"given {arg} {v}); name the script's own batch argument") from None
            raise
        tried.append((v, res.fits))
        results[v] = res
        return res.fits

    start = current_value(target, arg) or 1
    lo, hi = 0, None  # lo fits (0 = none yet), hi does not
    v = start
    if probe(v):
        lo = v
        while hi is None and v < limit:
            v *= 2
            if probe(v):
                lo = v
            else:
                hi = v
    else:
        hi = v
        while v > 1 and lo == 0:
            v //= 2
            if probe(v):
                lo = v
            else:
                hi = v
    if lo and hi is not None:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if probe(mid):
                lo = mid
            else:
                hi = mid
    return (lo or None), results.get(lo), tried
