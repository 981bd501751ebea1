"""Opt-in behaviour changes, off by default: TorchScript and ``channels_last``.

* :func:`set_jit_script_policy` ``("eager")`` makes ``torch.jit.script`` / ``script_method`` return
  their argument unchanged (one warning per call site) for backends that fail on TorchScript.
  The default ``"native"`` leaves TorchScript alone (transfer_to_npu disables it process-wide).
* :func:`set_channels_last_policy` ``(True)`` turns ``memory_format=torch.channels_last`` (and
  ``channels_last_3d``) in ``Tensor.to``/``Module.to``/``Tensor.contiguous``/``.cuda()`` into
  ``contiguous_format``: Ascend's automatic migration does not support channels_last.

Both are undone by :func:`ascend_compat.deactivate` (the jit patch is a registry patch).
"""
from __future__ import annotations

import warnings
from typing import Any

__all__ = ["set_channels_last_policy", "set_jit_script_policy", "jit_script_policy"]

CHANNELS_LAST = False
_JIT = "native"
_JIT_PATCHES: list = []
_WARNED: set = set()
#: called with no arguments after every policy change (child-process inheritance listens here)
ON_CHANGE: list = []


def _changed() -> None:
    for listener in tuple(ON_CHANGE):
        listener()


def set_channels_last_policy(keep_contiguous_format: bool) -> bool:
    """Enable/disable the channels_last policy; returns the previous setting."""
    global CHANNELS_LAST
    previous, CHANNELS_LAST = CHANNELS_LAST, bool(keep_contiguous_format)
    _changed()
    return previous


def keep_contiguous(memory_format: Any) -> Any:
    import torch

    if memory_format in (torch.channels_last, torch.channels_last_3d):
        from ascend_compat.cuda_shim.registry import hit

        hit("policy.channels_last")
        return torch.contiguous_format
    return memory_format


def jit_script_policy() -> str:
    return _JIT


def set_jit_script_policy(policy: str) -> str:
    """``"native"`` (default) or ``"eager"``; returns the previous policy."""
    global _JIT
    if policy not in ("native", "eager"):
        raise ValueError(f"jit script policy must be 'native' or 'eager', got {policy!r}")
    previous = _JIT
    if policy == previous:
        return previous
    from ascend_compat.cuda_shim.registry import Patch

    if policy == "eager":
        _JIT_PATCHES[:] = [
            Patch("torch.jit:script", _eager("torch.jit.script"), "jit script policy 'eager'", wrap=True),
            Patch("torch.jit:script_method", _eager("torch.jit.script_method"), "jit script policy 'eager'",
                  wrap=True),
        ]
        for p in _JIT_PATCHES:
            p.apply()
    else:
        for p in reversed(_JIT_PATCHES):
            p.revert()
        _JIT_PATCHES.clear()
    _JIT = policy
    _changed()
    return previous


def reset() -> None:
    """Back to the defaults (called by deactivate)."""
    set_jit_script_policy("native")
    set_channels_last_policy(False)


def _eager(name: str):
    def make(original):
        def script(obj: Any = None, *args: Any, **kwargs: Any) -> Any:
            from ascend_compat.cuda_shim.registry import _user_site, hit

            hit(f"policy.jit:{name}")
            site = _user_site()
            if site not in _WARNED:
                _WARNED.add(site)
                warnings.warn(f"ascend-compat: {name} runs the object eagerly (jit script policy 'eager')",
                              RuntimeWarning, stacklevel=2)
            return obj

        script.__wrapped__ = original
        return script

    return make
