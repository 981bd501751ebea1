"""Third-party detection points see the real CUDA answer (table: ``mapping/libraries.py``).

Each listed function runs inside :func:`..cuda_namespace.real_cuda` (thread-local, so concurrent
threads are unaffected). Patches wait for their module's import and check the installed version then.
"""
from __future__ import annotations

from typing import Any

from ascend_compat.cuda_shim.mapping.libraries import LIBRARY_DETECTION_POINTS
from ascend_compat.cuda_shim.registry import Patch, hit, make_wrapper


def truthful(original):
    """Wrap ``original`` so that, while it runs, torch.cuda.is_available() tells the truth."""
    from ascend_compat.cuda_shim.patches.cuda_namespace import real_cuda

    def call(*args: Any, **kwargs: Any) -> Any:
        hit(f"library detection: {getattr(original, '__qualname__', original)}")
        with real_cuda():
            return original(*args, **kwargs)

    return make_wrapper(original, call)


def patches() -> list:
    return [
        Patch(target, truthful, f"{dist} detection point sees the real CUDA answer",
              applies_to=f"{dist}>={minimum}", wrap=True, optional=True, defer=True, concept="libraries")
        for dist, minimum, target in LIBRARY_DETECTION_POINTS
    ]
