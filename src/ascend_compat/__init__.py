"""ascend-compat: run CUDA PyTorch code on Huawei Ascend NPUs.

Importing this package is cheap. With ``ASCEND_COMPAT_SIMULATE=1`` in the environment it installs
the simulated NPU (:mod:`ascend_compat.simulator`) first.
"""
from ascend_compat._version import __version__

from ascend_compat import _config as _cfg

if _cfg.simulate_requested():
    from ascend_compat import simulator as _simulator

    _simulator.install_from_env()

__all__ = ["__version__"]
