"""``ascend_compat.plan``: will a training or inference script fit, how fast, on how many NPUs.

Runs the unmodified script at its real size on simulated NPUs whose tensors have no storage
(:mod:`._fake`), one process per planned rank with a fake process group of the script's world size
(:mod:`._worker`), records every allocation into torch_npu's caching-allocator model and every op
(:mod:`._record`), and reports per rank the peak allocated/reserved memory, where it happens and
what is live there, the OOM torch_npu would raise on the chosen SoC, suggestions with their
estimated peaks (:mod:`.suggest`), and a roofline step time and MFU (:mod:`.roofline`).

    from ascend_compat import plan
    result = plan.plan(["train.py", "--batch-size", "8"], devices=8, steps=2, soc="Ascend910B3")
    result.fits, result.ranks[0]["peak_allocated"], result.to_json()

Ranks: an SPMD script's ranks differ only at the edges (uneven shards on the last rank), so by default
rank 0 and the last rank are planned and the others are reported like rank 0 (``ranks="all"`` plans
every one).
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from typing import Callable, List, Optional, Sequence

from ascend_compat._schemas import header


class PlanError(Exception):
    """The plan could not be made; ``code`` is the exit status the command line uses (``kind`` names why)."""

    def __init__(self, message: str, kind: str, code: int):
        super().__init__(message)
        self.kind, self.code = kind, code


@dataclasses.dataclass
class PlanResult:
    """The plan of one launch: ``ranks`` holds each planned rank's result (dicts, JSON-ready)."""

    soc: str
    world: int
    steps: int
    device_memory: int
    ranks: List[dict]
    planned_ranks: List[int]
    suggestions: List[dict] = dataclasses.field(default_factory=list)

    @property
    def fits(self) -> bool:
        return all(r.get("oom") is None for r in self.ranks)

    @property
    def oom(self) -> Optional[str]:
        return next((r["oom"] for r in self.ranks if r.get("oom")), None)

    @property
    def step_time_s(self) -> Optional[float]:
        times = [r.get("step_time_s") for r in self.ranks if r.get("step_time_s") is not None]
        return max(times) if times else None

    def worst(self) -> dict:
        return max(self.ranks, key=lambda r: r.get("peak_reserved", 0))

    def to_dict(self, timeline: bool = True) -> dict:
        ranks = [r if timeline else {k: v for k, v in r.items() if k != "timeline"} for r in self.ranks]
        return {**header("plan"), "fits": self.fits, "soc": self.soc, "world_size": self.world, "steps": self.steps,
                "device_memory": self.device_memory, "step_time_s": self.step_time_s, "oom": self.oom,
                "planned_ranks": self.planned_ranks, "ranks": ranks, "suggestions": self.suggestions}

    def to_json(self, timeline: bool = True) -> str:
        return json.dumps(self.to_dict(timeline), indent=1)


def check_soc(soc: Optional[str]) -> str:
    """The SoC name (None = the simulator's default); PlanError (usage) for one the SoC table lacks."""
    from ascend_compat.simulator.torch_npu.npu.soc_specs import DEFAULT_SOC, SOCS

    name = soc or DEFAULT_SOC
    if name not in SOCS:
        raise PlanError(f"unknown SoC {name!r}; choose one of: {', '.join(sorted(SOCS))}", "soc", 2)
    return name


def plan_rank(target: Sequence[str], rank: int, world: int, *, module: Optional[str] = None, steps: int = 1,
              soc: Optional[str] = None, capacity: Optional[int] = None, progress: bool = False,
              timeout: Optional[float] = None, env: Optional[dict] = None) -> dict:
    """Plan one rank in a fresh process; returns its result dict (``status``: ok/failed/unused)."""
    spec = {"target": list(target), "module": module, "rank": rank, "world": world, "steps": steps,
            "soc": check_soc(soc), "capacity": capacity, "progress": progress}
    with tempfile.TemporaryDirectory(prefix="ascend-compat-plan-") as tmp:
        spec_path, out_path = os.path.join(tmp, "spec.json"), os.path.join(tmp, "out.json")
        with open(spec_path, "w", encoding="utf-8") as fh:
            json.dump(spec, fh)
        run_env = dict(os.environ if env is None else env)
        run_env.setdefault("PYTHONUNBUFFERED", "1")
        try:
            proc = subprocess.run([sys.executable, "-m", "ascend_compat.plan._worker", spec_path, out_path],
                                  env=run_env, timeout=timeout, stdout=sys.stderr if progress else subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
        except subprocess.TimeoutExpired:
            raise PlanError(f"planning rank {rank} took longer than {timeout:.0f} s", "timeout", 1) from None
        if not os.path.exists(out_path):
            tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
            raise PlanError(f"planning rank {rank} failed before the script ran (exit {proc.returncode}):\n{tail}",
                            "internal", 4)
        with open(out_path, encoding="utf-8") as fh:
            result = json.load(fh)
    return result


def plan(target: Sequence[str], *, module: Optional[str] = None, devices: int = 1, steps: int = 1,
         soc: Optional[str] = None, ranks: str = "edges", capacity: Optional[int] = None, progress: bool = False,
         timeout: Optional[float] = None, suggest: bool = True,
         on_rank: Optional[Callable[[int], None]] = None) -> PlanResult:
    """Plan ``target`` (a script and its arguments, or the arguments of ``module``) on ``devices`` ranks.

    Raises :class:`PlanError` when the script fails (``kind="script"``, code 1), never puts a tensor on
    the device (``"unused"``, code 1) or the SoC is unknown (``"soc"``, code 2).
    """
    soc = check_soc(soc)
    planned = [0] if devices == 1 or ranks == "edges" and devices == 1 else (
        list(range(devices)) if ranks == "all" else sorted({0, devices - 1}))
    results = []
    for i, r in enumerate(planned):
        if on_rank is not None:
            on_rank(r)
        if progress:
            print(f"plan: rank {r} ({i + 1} of {len(planned)} planned, world size {devices})", file=sys.stderr,
                  flush=True)
        res = plan_rank(target, r, devices, module=module, steps=steps, soc=soc, capacity=capacity,
                        progress=progress, timeout=timeout)
        if res["status"] == "failed":
            raise PlanError(f"the script failed on rank {r} before the plan was complete: {res['error']}",
                            "script", 1)
        if res["status"] == "unused":
            raise PlanError("the script never put a tensor on the device (no npu/cuda allocation): nothing to "
                            "plan. Does it move its model to 'cuda'/'npu'?", "unused", 1)
        results.append(res)
    result = PlanResult(soc, devices, steps, results[0]["device_memory"], results, planned)
    if suggest:
        from ascend_compat.plan.suggest import suggestions

        result.suggestions = suggestions(result)
    return result


__all__ = ["plan", "plan_rank", "PlanResult", "PlanError", "check_soc"]
