"""Third-party CUDA libraries on the NPU, in two parts:

* :mod:`.dropins` - our implementations of ``flash_attn``, ``apex``, ``xformers`` and
  ``bitsandbytes``, served under those names while the shim is active;
* :mod:`.integrations` - patches that make transformers, accelerate, DeepSpeed and Lightning
  choose and use the NPU, each waiting for its library's import.

:func:`changes` is what activation adds to the shim's own patches (the shim itself never imports
this package). ``ASCEND_COMPAT_DISABLE=name,name`` (or ``all``) leaves named parts out; an explicit
``apply()`` / ``dropins._finder.install()`` still applies them, and everything returned here is
idempotent with such calls.

The modules' first homes (``ascend_compat.ecosystem.flash_attn``, ``...lightning`` ...) stay
importable as aliases of the moved modules (:mod:`._moved`).
"""
from __future__ import annotations

from ascend_compat.ecosystem import _moved

_moved.install()

__all__ = ["NAMES", "changes", "disabled"]

DROPINS = ("flash_attn", "apex", "xformers", "bitsandbytes")
LIBRARIES = ("transformers", "accelerate", "deepspeed", "lightning")
NAMES = DROPINS + LIBRARIES


def disabled() -> frozenset:
    """The parts ``ASCEND_COMPAT_DISABLE`` names (``all`` = every one); unknown names are ignored
    with a warning naming the valid ones (a typo must not stop the user's program)."""
    from ascend_compat import _config

    asked = _config.disabled_integrations()
    if "all" in asked:
        return frozenset(NAMES)
    unknown = sorted(asked - set(NAMES))
    if unknown:
        _config.warn_invalid("ASCEND_COMPAT_DISABLE", ",".join(unknown),
                             f"expected a comma-separated list of {', '.join(NAMES)}, or all", "these names are ignored")
    return frozenset(asked) & frozenset(NAMES)


def changes() -> list:
    """Every drop-in and integration change not disabled and not already live, drop-ins first."""
    from ascend_compat.ecosystem import dropins, integrations

    off = disabled()
    chosen_dropins = [name for name in DROPINS if name not in off]
    chosen_libraries = [name for name in LIBRARIES if name not in off]
    return [*(dropins.changes(only=chosen_dropins) if chosen_dropins else []),
            *(integrations.patches(only=chosen_libraries) if chosen_libraries else [])]
