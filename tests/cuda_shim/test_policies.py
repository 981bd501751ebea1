"""Opt-in policies: TorchScript eager mode and channels_last -> contiguous."""
from __future__ import annotations

import pytest
import torch

from ascend_compat.cuda_shim import policies

pytestmark = pytest.mark.usefixtures("shim")


def test_jit_script_native_by_default_and_eager_on_request():
    original = torch.jit.script
    assert policies.jit_script_policy() == "native"
    policies.set_jit_script_policy("eager")
    try:
        fn = lambda x: x + 1  # noqa: E731 - not scriptable: proves it is returned unchanged
        with pytest.warns(RuntimeWarning, match="eagerly"):
            assert torch.jit.script(fn) is fn
    finally:
        policies.set_jit_script_policy("native")
    assert torch.jit.script is original
    with pytest.raises(ValueError):
        policies.set_jit_script_policy("sometimes")


def test_deactivate_resets_policies(shim):
    policies.set_jit_script_policy("eager")
    policies.set_channels_last_policy(True)
    shim.deactivate()
    assert policies.jit_script_policy() == "native" and not policies.CHANNELS_LAST
    assert not hasattr(torch.jit.script, "__wrapped__") or torch.jit.script.__module__ != __name__
    shim.activate("simulator")


def test_channels_last_policy():
    x = torch.randn(2, 3, 4, 4)
    assert x.to("cuda", memory_format=torch.channels_last).is_contiguous(memory_format=torch.channels_last)
    policies.set_channels_last_policy(True)
    try:
        y = x.to("cuda", memory_format=torch.channels_last)
        assert y.is_contiguous()
        assert x.cuda(memory_format=torch.channels_last).is_contiguous()
        assert x.contiguous(memory_format=torch.channels_last).is_contiguous()
        m = torch.nn.Conv2d(3, 3, 1).to("cuda", memory_format=torch.channels_last)
        assert m.weight.is_contiguous()
    finally:
        policies.set_channels_last_policy(False)
