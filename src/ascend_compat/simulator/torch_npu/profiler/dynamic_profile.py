"""``torch_npu.profiler.dynamic_profile`` of the stand-in: torch_npu's on-demand profiling switch (driven by a
JSON file that msprof tools edit while the job runs). The simulated NPU has no msprof to drive it, so
``init``/``start``/``step`` accept torch_npu's arguments and do nothing; profile with
``torch_npu.profiler.profile`` instead."""
from __future__ import annotations

from typing import Optional

__all__ = ["init", "step", "start"]

_state = {"path": None, "steps": 0}


def init(path: str) -> None:
    """Remember the config directory torch_npu would watch (nothing is watched)."""
    if not isinstance(path, str):
        raise TypeError(f"dynamic_profile.init expects a path string, got {type(path).__name__}")
    _state["path"] = path


def step() -> None:
    """Mark a training step (counted, nothing is profiled)."""
    _state["steps"] += 1


def start(config_path: Optional[str] = None) -> None:
    """Would start a profiling window from ``config_path``; no-op on the simulated NPU."""
