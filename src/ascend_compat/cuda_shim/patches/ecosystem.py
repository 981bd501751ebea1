"""Third-party CUDA libraries on the NPU (see :mod:`ascend_compat.ecosystem`).

* drop-in ``flash_attn``, ``apex``, ``xformers`` and ``bitsandbytes`` modules, served by an import
  finder only while active and only when the real package is not installed;
* the transformers, accelerate, DeepSpeed and Lightning integrations, each waiting for its
  library's import (nothing is imported here).

``ASCEND_COMPAT_DISABLE=name,name`` (or ``all``) leaves the named integrations out (see
:mod:`ascend_compat._config`); an explicit ``apply()`` / ``_modules.install()`` still applies them.
Everything returned here is idempotent with such explicit calls: a patch already applied or
waiting is not declared twice.
"""
from __future__ import annotations

DROPINS = ("flash_attn", "apex", "xformers", "bitsandbytes")
LIBRARIES = ("transformers", "accelerate", "deepspeed", "lightning")
NAMES = DROPINS + LIBRARIES


def disabled() -> frozenset[str]:
    """The integrations ``ASCEND_COMPAT_DISABLE`` names (``all`` = every one); unknown names are
    ignored with a warning naming the valid ones (a typo must not stop the user's program)."""
    from ascend_compat import _config

    asked = _config.disabled_integrations()
    if "all" in asked:
        return frozenset(NAMES)
    unknown = sorted(asked - set(NAMES))
    if unknown:
        _config.warn_invalid("ASCEND_COMPAT_DISABLE", ",".join(unknown),
                             f"a comma-separated list of {', '.join(NAMES)}, or all",
                             "these names are ignored")
    return frozenset(asked) & frozenset(NAMES)


def patches() -> list:
    from ascend_compat.ecosystem._library_patches import all_patches
    from ascend_compat.ecosystem._modules import changes

    off = disabled()
    dropins = [name for name in DROPINS if name not in off]
    libraries = [name for name in LIBRARIES if name not in off]
    return [*(changes(only=dropins) if dropins else []), *all_patches(only=libraries)]
