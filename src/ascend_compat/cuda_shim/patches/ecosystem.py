"""Third-party CUDA libraries on the NPU (see :mod:`ascend_compat.ecosystem`).

* drop-in ``flash_attn``, ``apex``, ``xformers`` and ``bitsandbytes`` modules, served by an import
  finder only while active and only when the real package is not installed;
* the transformers, accelerate, DeepSpeed and Lightning integrations, each waiting for its
  library's import (nothing is imported here).
"""
from __future__ import annotations


def patches() -> list:
    from ascend_compat.ecosystem._library_patches import all_patches
    from ascend_compat.ecosystem._modules import changes

    return [*changes(), *all_patches()]
