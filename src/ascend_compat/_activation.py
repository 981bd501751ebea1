"""The one decision made when ``ascend_compat`` is imported, and the activate/deactivate doors.

At import (:func:`at_import`):

1. ``ASCEND_COMPAT_NO_PATCH=1``, or this process is the ``ascend-compat`` command itself: no shim
   at import (the simulator is still installed if ``ASCEND_COMPAT_SIMULATE=1`` asks for it; the
   ``run`` command activates the shim itself);
2. otherwise, if an NPU backend is present or requested (the simulator, or an installed
   ``torch_npu``): translate the environment (before the backend initialises), install/import the
   backend, apply the patches;
3. otherwise change nothing and say so at DEBUG only.
"""
from __future__ import annotations

import os
import sys
import threading

from ascend_compat import _config, _inherit
from ascend_compat._log import get_logger

log = get_logger("activation")
_LOCK = threading.RLock()


def decide() -> str | None:
    """Which backend the shim would translate to now: ``"simulator"``, ``"torch_npu"`` or None."""
    from ascend_compat import backend

    if _config.simulate_requested() or backend.simulator_installed():
        return "simulator"
    if backend.torch_npu_installed():
        return "torch_npu"
    return None


def launched_as_cli() -> bool:
    """True when this process is the ``ascend-compat`` command itself (console script or
    ``python -m ascend_compat``): commands decide for themselves (``run`` activates; ``check``,
    ``doctor``... must not import torch_npu just because the package was imported)."""
    argv0 = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if argv0 in ("ascend-compat", "ascend-compat.exe", "ascend-compat-script.py"):
        return True
    orig = getattr(sys, "orig_argv", None) or []
    for i, arg in enumerate(orig[:-1]):
        if arg == "-m":
            return orig[i + 1] in ("ascend_compat", "ascend_compat.__main__")
        if not arg.startswith("-") and i > 0:
            break
    return False


def at_import() -> None:
    if launched_as_cli() or _config.no_patch_requested():
        log.debug("shim not activated at import (ascend-compat command, or ASCEND_COMPAT_NO_PATCH)")
        if _config.simulate_requested():
            from ascend_compat import simulator

            simulator.install_from_env()
        return
    choice = decide()
    if choice is None:
        log.debug("no NPU backend (neither torch_npu nor the simulator): nothing changed")
        return
    activate(choice)


def activate(backend_name: str | None = None) -> bool:
    """Activate the shim; True if this call activated it, False if it already was active.

    Raises RuntimeError (saying what to do) when there is no NPU backend to translate to.
    """
    from ascend_compat import cuda_shim
    from ascend_compat.cuda_shim import registry
    from ascend_compat.cuda_shim.patches.env import EnvTranslation

    with _LOCK:
        if cuda_shim.is_active():
            return False
        choice = backend_name or decide()
        if choice is None:
            raise RuntimeError(
                "ascend-compat: no NPU backend to translate CUDA calls to. Install torch_npu on an Ascend "
                "machine, or use the simulated NPU: `ascend-compat run --simulate script.py` or "
                "ASCEND_COMPAT_SIMULATE=1."
            )
        registry.apply_all([EnvTranslation()])  # before the backend reads its variables
        try:
            _install_backend(choice)
            cuda_shim.apply(choice, extra=_ecosystem_changes)
        except BaseException:
            registry.revert_all()
            raise
        _inherit.export(choice)
        _watch_for_a_cpu_run()
        _route_ops_to_cpu()
        return True


_EXIT_CHECK = []


def _watch_for_a_cpu_run() -> None:
    if not _EXIT_CHECK:
        import atexit

        atexit.register(report_cpu_run)
        _EXIT_CHECK.append(True)


def report_cpu_run(stream=None) -> bool:
    """At exit: if CUDA APIs were called (translated) while nothing was ever allocated on the NPU, by
    this process or by a process it started (a launcher's ranks), say so on stderr in one line - the
    script silently ran on the CPU. Returns True when it said so.

    DataLoader workers are exempt (they are meant to stay on the host)."""
    from ascend_compat import cuda_shim
    from ascend_compat.cuda_shim import registry

    if not cuda_shim.is_active():
        return False
    calls = sum(registry.counters().values())
    torch = sys.modules.get("torch")
    used = torch is not None and _npu_was_used(torch) or _inherit.descendants_used_npu()
    _inherit.report_npu_use(used)  # a launcher's ranks speak for it: tell the shimmed parent, if any
    if not calls or torch is None or used or _in_dataloader_worker(torch):
        return False
    first = registry.first_hit()
    where = f" (the first, {first[0]}, at {first[1][0]}:{first[1][1]})" if first else ""
    print(f"ascend-compat: this run made {calls} CUDA call(s){where} but never allocated memory on the NPU: it "
          "ran on the CPU. Check which device the script or its library chose (ASCEND_COMPAT_LOG_LEVEL=DEBUG "
          "logs every translated call).", file=stream or sys.stderr)
    return True


def _in_dataloader_worker(torch) -> bool:
    data = sys.modules.get("torch.utils.data")
    return data is not None and data.get_worker_info() is not None


def _npu_was_used(torch) -> bool:
    npu = getattr(torch, "npu", None)
    if npu is None or not npu.is_initialized():
        return False
    for index in range(npu.device_count()):
        stats = npu.memory_stats(index)
        if stats.get("allocation.all.allocated", 0) or npu.max_memory_allocated(index):
            return True
    return False


def _route_ops_to_cpu() -> None:
    """``ASCEND_COMPAT_CPU_OPS``: the named ops run on the CPU (a bad name warns, never stops the program)."""
    import os

    if not os.environ.get("ASCEND_COMPAT_CPU_OPS", "").strip():
        return
    from ascend_compat.accuracy import cpu_ops

    try:
        cpu_ops.apply_from_env()
    except ValueError as exc:
        _config.warn_invalid("ASCEND_COMPAT_CPU_OPS", os.environ["ASCEND_COMPAT_CPU_OPS"], str(exc),
                             "no op routed to the CPU")


def _ecosystem_changes() -> list:
    from ascend_compat import ecosystem

    return ecosystem.changes()


def _install_backend(choice: str) -> None:
    if choice == "simulator":
        from ascend_compat import simulator

        if not simulator.is_installed():
            simulator.install_from_env()
    elif choice == "torch_npu":
        import torch_npu  # noqa: F401 - registers the npu device
    else:
        raise ValueError(f"unknown backend {choice!r}")


def deactivate() -> int:
    """Undo the shim (every patched object restored by identity); returns #changes reverted."""
    from ascend_compat import cuda_shim

    with _LOCK:
        _inherit.withdraw()
        accuracy = sys.modules.get("ascend_compat.accuracy.cpu_ops")
        if accuracy is not None:
            accuracy.reset()
        return cuda_shim.revert()
