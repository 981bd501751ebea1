"""``torch_npu.utils.collect_env`` of the stand-in: ``get_cann_version`` and ``get_torch_npu_version``."""
from __future__ import annotations

__all__ = ["get_cann_version", "get_torch_npu_version"]


def get_cann_version():
    from ascend_compat.simulator.torch_npu.npu.properties import get_cann_version as simulated

    return simulated()


def get_torch_npu_version():
    import ascend_compat.simulator.torch_npu as stand_in

    return stand_in.__version__
