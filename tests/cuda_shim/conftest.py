"""Shim tests run against the simulated NPU, installed once per pytest process (irreversible).

The shim itself is reversible: the ``shim`` fixture activates it for one test and deactivates it
afterwards, so every test also exercises ``deactivate()``. Tests about import-time behaviour or
process-wide state run in subprocesses (``run_python``).
"""
from __future__ import annotations

import pytest


def _install():
    from ascend_compat import simulator

    if not simulator.is_installed():
        simulator.install()


_install()


@pytest.fixture
def shim():
    """The shim, active for the duration of one test."""
    import ascend_compat

    ascend_compat.deactivate()
    ascend_compat.activate("simulator")
    try:
        yield ascend_compat
    finally:
        ascend_compat.deactivate()
