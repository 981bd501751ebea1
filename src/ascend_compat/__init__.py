"""ascend-compat: run CUDA PyTorch code on Huawei Ascend NPUs.

``import ascend_compat`` activates the runtime shim when an NPU backend is present (real
``torch_npu``, or the simulated NPU requested with ``ASCEND_COMPAT_SIMULATE=1``); on a machine with
neither it changes nothing. ``ASCEND_COMPAT_NO_PATCH=1`` disables activation. Importing is cheap.

Public API: :func:`activate`, :func:`deactivate`, :func:`activated` (context manager),
:func:`report`.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from ascend_compat._version import __version__

__all__ = ["__version__", "activate", "deactivate", "activated", "report"]


def activate(backend: str | None = None) -> bool:
    """Activate the CUDA->NPU shim (idempotent, thread-safe); True if this call activated it.

    ``backend``: ``"simulator"`` or ``"torch_npu"``; default: whichever is present. Raises
    RuntimeError saying what to do when there is none.
    """
    from ascend_compat import _activation

    return _activation.activate(backend)


def deactivate() -> int:
    """Undo the shim: every patched object is restored (by identity); returns #changes undone."""
    from ascend_compat import _activation

    return _activation.deactivate()


@contextlib.contextmanager
def activated(backend: str | None = None) -> Iterator[None]:
    """``with ascend_compat.activated():`` - the shim is active inside; deactivated on exit
    if this block activated it."""
    mine = activate(backend)
    try:
        yield
    finally:
        if mine:
            deactivate()


def report():
    """What the shim translated and how often (``print(ascend_compat.report())``)."""
    from ascend_compat import cuda_shim

    return cuda_shim.report()


def _at_import() -> None:
    from ascend_compat import _activation

    _activation.at_import()


_at_import()
