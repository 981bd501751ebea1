"""Install-time refusals and probes of the undocumented torch behaviours the simulator relies on.

Refusals (nothing is registered when they fire): real torch_npu importable or loaded, another
PrivateUse1 backend already registered, torch too old for the mechanisms used. Probes (docs/simulator_pitfalls.md,
pitfall 10): kDLExtDev <-> PrivateUse1 in DLPack, PyObject preservation of the exported host tensor,
``torch._C._acc``, ``Library.fallback`` with a Python function, ``OpOverload.redispatch``.
Each failure raises :class:`SimulatorUnavailable` saying what failed and what to do.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import weakref

import torch

#: oldest torch with ``torch.utils.backend_registration._setup_privateuseone_for_python_backend``
#: (pytorch PR #157859, first released in 2.9) and the other mechanisms checked below.
MIN_TORCH = "2.9"


class SimulatorUnavailable(RuntimeError):
    """The simulated NPU cannot be installed in this process; the message says why and what to do."""


def _ours(path) -> bool:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../ascend_compat
    return bool(path) and os.path.abspath(path).startswith(here)


def refuse_conflicts() -> None:
    """Refuse when real torch_npu is loaded/importable or PrivateUse1 is already taken."""
    mod = sys.modules.get("torch_npu")
    if mod is not None and not _ours(getattr(mod, "__file__", None)):
        raise SimulatorUnavailable(
            f"real torch_npu is already imported (from {getattr(mod, '__file__', '?')}); the simulated "
            "NPU cannot share a process with it. Use the real NPU, or run without torch_npu installed.")
    try:
        spec = importlib.util.find_spec("torch_npu")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and not _ours(spec.origin):
        raise SimulatorUnavailable(
            f"real torch_npu is installed ({spec.origin}); the simulated NPU refuses to shadow it. "
            "On an Ascend machine use the real device; to simulate, use an environment without torch_npu "
            "(e.g. a separate venv).")
    name = torch._C._get_privateuse1_backend_name()
    if name != "privateuseone" or hasattr(torch, "npu"):
        raise SimulatorUnavailable(
            f"another PrivateUse1 backend is already registered in this process ({name!r}"
            + (", torch.npu exists" if hasattr(torch, "npu") else "")
            + "); PyTorch allows one per process. Start a fresh process to use the simulated NPU.")


def check_torch() -> None:
    """Refuse when torch lacks a mechanism the simulator uses."""
    missing = []
    try:
        from torch.utils import backend_registration as br
    except ImportError:
        br = None
    if br is None or not hasattr(br, "_setup_privateuseone_for_python_backend"):
        missing.append("torch.utils.backend_registration._setup_privateuseone_for_python_backend")
    acc = getattr(torch._C, "_acc", None)
    for attr in ("PrivateUse1Hooks", "DeviceGuard", "register_python_privateuseone_hook",
                 "register_python_privateuseone_device_guard"):
        if acc is None or not hasattr(acc, attr):
            missing.append(f"torch._C._acc.{attr}")
    if not hasattr(torch.library.Library, "fallback"):
        missing.append("torch.library.Library.fallback")
    if not hasattr(torch.ops.aten.add.Tensor, "redispatch"):
        missing.append("OpOverload.redispatch")
    for attr in ("_to_dlpack", "_from_dlpack", "_dispatch_has_kernel_for_dispatch_key",
                 "_dispatch_get_all_op_names", "_ExcludeDispatchKeyGuard"):
        if not hasattr(torch._C, attr):
            missing.append(f"torch._C.{attr}")
    if missing:
        raise SimulatorUnavailable(
            f"torch {torch.__version__} is too old for the simulated NPU: missing {', '.join(missing)}. "
            f"Install torch >= {MIN_TORCH} (the CPU build is enough).")


def probe_dlpack() -> None:
    """Check the DLPack retag to PrivateUse1 and PyObject preservation (after the rename, before kernels)."""
    from ascend_compat.simulator import _memory

    fired = []
    try:
        host = torch.arange(4, dtype=torch.float32)
        ref = weakref.ref(host, lambda _r: fired.append(True))
        _memory._retag_checked(torch.zeros(1), _memory.KDL_CPU, 0)  # capsule layout
        dev = _memory._retag(host, _memory.KDL_EXT_DEV, 0)
        if dev.device.type != torch._C._get_privateuse1_backend_name() or dev.data_ptr() != host.data_ptr():
            raise SimulatorUnavailable(
                f"DLPack kDLExtDev is no longer imported as a PrivateUse1 tensor sharing memory "
                f"(got device {dev.device}); this torch {torch.__version__} is not supported.")
        del host  # reference counting frees at once; a gc pass is not needed (and costs ~0.3 s)
        if ref() is None or fired:
            raise SimulatorUnavailable(
                "torch no longer preserves the Python object of a tensor held by a DLPack capsule; the "
                f"simulator's memory accounting cannot work on torch {torch.__version__}.")
        back = _memory._retag(dev, _memory.KDL_CPU, 0)
        if back.tolist() != [0.0, 1.0, 2.0, 3.0]:
            raise SimulatorUnavailable("DLPack round trip through the simulated device lost data.")
        del dev, back
        if not fired:
            raise SimulatorUnavailable(
                "the host tensor behind a simulated device allocation was not released with it; "
                f"memory accounting cannot work on torch {torch.__version__}.")
    except SimulatorUnavailable:
        raise
    except Exception as exc:  # any other failure of an undocumented mechanism
        raise SimulatorUnavailable(f"DLPack self-check failed on torch {torch.__version__}: {exc!r}") from exc


def probe_installed() -> None:
    """After registration: the fallback runs, views share storage, memory is released."""
    from ascend_compat.simulator import _memory

    try:
        before = _memory.memory_allocated(0)
        x = torch.ones(4, device="npu")
        y = (x + 1).view(2, 2)
        y.add_(1)
        z = y.view(4)
        if z.untyped_storage().data_ptr() != y.untyped_storage().data_ptr() or z.tolist() != [3.0] * 4:
            raise SimulatorUnavailable("self-check: a view on the simulated NPU does not share storage")
        del x, y, z
        if _memory.memory_allocated(0) != before:
            raise SimulatorUnavailable("self-check: simulated NPU memory was not released")
        # the user's statistics start at zero, as on a fresh torch_npu process
        _memory.reset_accumulated_memory_stats(0)
        _memory.reset_peak_memory_stats(0)
    except SimulatorUnavailable:
        raise
    except Exception as exc:
        raise SimulatorUnavailable(f"self-check of the installed simulated NPU failed: {exc!r}") from exc
