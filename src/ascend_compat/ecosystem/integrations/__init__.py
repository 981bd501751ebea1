"""Library integrations: transformers, accelerate, DeepSpeed and Lightning on the NPU.

Each member module (``transformers_patch``, ``accelerate_patch``, ``deepspeed_patch``,
``lightning``) declares its patches (``patches()``) and applies them by hand (``apply()``); every
patch waits for its library's import, so nothing here imports a library. :func:`patches` is this
package's patch list, which activation hands to the shim.
"""
from __future__ import annotations

import importlib

from ascend_compat.ecosystem.integrations._apply import is_live

#: integration name -> member module
MEMBERS = {
    "transformers": "transformers_patch",
    "accelerate": "accelerate_patch",
    "deepspeed": "deepspeed_patch",
    "lightning": "lightning",
}
NAMES = tuple(MEMBERS)


def patches(only=None) -> list:
    """The patches of every integration (or of those named in ``only``) not yet applied or waiting."""
    out = []
    for name, member in MEMBERS.items():
        if only is None or name in only:
            module = importlib.import_module(f"{__name__}.{member}")
            out.extend(p for p in module.patches() if not is_live(p))
    return out
