"""Install the simulated NPU once for this pytest process (the install is process-global and
irreversible; tests that need another configuration run in subprocesses, see ``_subproc``)."""
from __future__ import annotations

import pytest


def _install():
    from ascend_compat import simulator

    if not simulator.is_installed():
        simulator.install()
    return simulator


_install()


@pytest.fixture
def sim():
    """The installed ``ascend_compat.simulator`` module."""
    return _install()


@pytest.fixture
def exact_conv():
    """HF32 off for the test (``torch.npu.conv.allow_hf32 = False``), as torch_npu's own
    convolution tests do, so convolutions compare exactly with the CPU."""
    import torch

    saved = torch.npu.conv.allow_hf32
    torch.npu.conv.allow_hf32 = False
    try:
        yield
    finally:
        torch.npu.conv.allow_hf32 = saved
