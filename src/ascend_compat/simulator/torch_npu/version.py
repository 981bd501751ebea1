"""``torch_npu.version`` of the stand-in: ``__version__`` (the emulated torch_npu version) and ``git_version``
(torch_npu's build commit; the simulator has none and says so)."""
from __future__ import annotations

__all__ = ["__version__", "git_version"]

git_version = "unknown (ascend-compat simulated torch_npu)"


def __getattr__(name: str):
    if name == "__version__":
        import ascend_compat.simulator.torch_npu as stand_in

        return stand_in.__version__
    raise AttributeError(f"module 'torch_npu.version' has no attribute {name!r}")
