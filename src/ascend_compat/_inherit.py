"""Every Python process a shimmed process starts is shimmed the same way.

While the shim is active, :func:`export` puts ``ascend_compat/_boot`` first on ``PYTHONPATH`` and
describes the shim in the environment children inherit:

* ``ASCEND_COMPAT_INHERIT`` - the backend (``simulator`` or ``torch_npu``);
* ``ASCEND_COMPAT_SIMULATE=1`` and the simulator settings that were given as ``install()``
  arguments rather than ``ASCEND_COMPAT_SIM_*`` variables (those are inherited as they are);
* ``ASCEND_COMPAT_INHERIT_POLICIES`` - the opt-in policies (float64 conversion, channels_last, jit);
* ``ASCEND_COMPAT_INHERIT_NPU_USED`` - a file a child creates at exit when it (or one of its own
  children) used the NPU (:func:`report_npu_use`), so a launcher that only counted devices does not
  say at exit that the run stayed on the CPU (:func:`descendants_used_npu`).

A child interpreter - started by ``subprocess``, ``multiprocessing`` or ``torch.multiprocessing``
with spawn, a DataLoader worker, Lightning's DDP launcher, ``accelerate launch``, the ``deepspeed``
launcher, a notebook launcher - imports ``_boot/sitecustomize.py`` at start-up, which calls
:func:`boot`: the shim activates when the child first imports ``torch`` (a child that never imports
torch pays one environment lookup), then the policies are applied. Launchers that build the child's
environment from ``os.environ`` (all of the above) keep these variables; the child's own
``sys.argv`` does not matter.

``ASCEND_COMPAT_NO_INHERIT=1`` opts out (children run unshimmed); :func:`withdraw` (called by
``ascend_compat.deactivate()``) restores the environment as it was.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Dict, Optional

from ascend_compat import _config
from ascend_compat._log import get_logger

__all__ = ["BOOT_DIR", "MARK", "POLICIES", "NPU_USED", "boot", "export", "exported", "refresh_policies", "withdraw",
           "report_npu_use", "descendants_used_npu"]

log = get_logger("inherit")
BOOT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_boot")
MARK = "ASCEND_COMPAT_INHERIT"
POLICIES = "ASCEND_COMPAT_INHERIT_POLICIES"
NPU_USED = "ASCEND_COMPAT_INHERIT_NPU_USED"
_LOCK = threading.Lock()
_SAVED: Optional[Dict[str, Optional[str]]] = None  # variable -> value before export (None: unset)

#: simulator setting -> the variable a child reads it from
_SIM_VARS = (("devices", "ASCEND_COMPAT_SIM_DEVICES"), ("float64", "ASCEND_COMPAT_SIM_FLOAT64"),
             ("memory_capacity", "ASCEND_COMPAT_SIM_MEMORY"), ("soc", "ASCEND_COMPAT_SIM_SOC"),
             ("torch_npu_version", "ASCEND_COMPAT_SIM_TORCH_NPU_VERSION"),
             ("autograd_threads", "ASCEND_COMPAT_SIM_AUTOGRAD_THREADS"))


def exported() -> bool:
    """True while this process's children are set up to inherit the shim."""
    return _SAVED is not None


def export(backend: str) -> bool:
    """Describe the active shim in the environment children inherit; False when opted out."""
    global _SAVED
    if _config.flag("ASCEND_COMPAT_NO_INHERIT"):
        log.debug("ASCEND_COMPAT_NO_INHERIT: child processes will not be shimmed")
        return False
    values = {MARK: backend, POLICIES: _policies(), "PYTHONPATH": _with_boot_dir(os.environ.get("PYTHONPATH")),
              NPU_USED: _marker()}
    if backend == "simulator":
        values["ASCEND_COMPAT_SIMULATE"] = "1"
        values.update(_simulator_settings())
    with _LOCK:
        if _SAVED is None:
            _SAVED = {name: os.environ.get(name) for name in values}
        else:
            for name in values:
                _SAVED.setdefault(name, os.environ.get(name))
        os.environ.update(values)
    from ascend_compat.cuda_shim import dtype_manager, policies

    for hooks in (dtype_manager.ON_CHANGE, policies.ON_CHANGE):
        if refresh_policies not in hooks:
            hooks.append(refresh_policies)
    return True


_MARKER: Optional[str] = None  # this process's NPU_USED file (its children create it)
_PARENT_MARKER: Optional[str] = None  # the NPU_USED file of the shimmed process that started this one


def _marker() -> str:
    """This process's NPU_USED path (created by a child that used the NPU, never by this process);
    the first call also remembers the parent's, which the environment held until now."""
    global _MARKER, _PARENT_MARKER
    if _MARKER is None:
        import secrets
        import tempfile

        _PARENT_MARKER = os.environ.get(NPU_USED) or None
        _MARKER = os.path.join(tempfile.gettempdir(), f"ascend-compat-npu-used-{os.getpid()}-{secrets.token_hex(4)}")
    return _MARKER


def descendants_used_npu() -> bool:
    """True when a process this one started (or one of theirs) used the NPU and has exited."""
    return _MARKER is not None and os.path.exists(_MARKER)


def report_npu_use(used: bool) -> None:
    """At exit: tell the shimmed parent that this process or its descendants used the NPU (``used``), and
    remove this process's own file. Never raises: the parent may be gone."""
    for path, create in ((_PARENT_MARKER, used), (_MARKER, False)):
        if not path:
            continue
        try:
            if create:
                with open(path, "a", encoding="utf-8"):
                    pass
            elif os.path.exists(path):
                os.remove(path)
        except OSError:
            pass


def withdraw() -> None:
    """Put every variable :func:`export` changed back as it was."""
    global _SAVED
    with _LOCK:
        saved, _SAVED = _SAVED, None
    from ascend_compat.cuda_shim import dtype_manager, policies

    for hooks in (dtype_manager.ON_CHANGE, policies.ON_CHANGE):
        if refresh_policies in hooks:
            hooks.remove(refresh_policies)
    for name, value in (saved or {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def refresh_policies() -> None:
    """Registered with the policy modules' ``ON_CHANGE`` hooks while exported, so children started
    from then on get the policy in force."""
    if _SAVED is not None:
        os.environ[POLICIES] = _policies()


def boot(inherited_policies: str) -> None:
    """In a child started by a shimmed process, once it has imported torch (``_boot/sitecustomize.py``
    calls this, with the parent's policies read before anything of ascend-compat was imported:
    activation exports the child's own): the shim is active now (importing ascend_compat activated
    it from the inherited environment); apply the parent's policies."""
    from ascend_compat import cuda_shim

    if cuda_shim.is_active():
        _apply_policies(inherited_policies)
        refresh_policies()


def _with_boot_dir(pythonpath: Optional[str]) -> str:
    parts = [p for p in (pythonpath or "").split(os.pathsep) if p and os.path.abspath(p) != BOOT_DIR]
    return os.pathsep.join([BOOT_DIR, *parts])


def _simulator_settings() -> Dict[str, str]:
    """The installed simulator's settings that children would not get from their environment."""
    simulator = sys.modules.get("ascend_compat.simulator")
    cfg = simulator.config() if simulator is not None and simulator.is_installed() else None
    if cfg is None:
        return {}
    out = {}
    for attr, var in _SIM_VARS:
        value = getattr(cfg, attr)
        if value is None or var in os.environ:  # a variable is inherited as it is (even one it ignored)
            continue
        if value == (_config_module().implied_devices() if attr == "devices" else _default(attr)):
            continue  # children arrive at the same value by themselves
        out[var] = str(value)
    return out


def _config_module():
    from ascend_compat.simulator import _config

    return _config


def _default(attr: str):
    return getattr(_config_module().SimConfig(), attr)


def _policies() -> str:
    from ascend_compat.cuda_shim import dtype_manager, policies

    return (f"dtype={dtype_manager.current_policy().value},channels_last={int(policies.CHANNELS_LAST)},"
            f"jit={policies.jit_script_policy()}")


def _apply_policies(text: str) -> None:
    if not text:
        return
    from ascend_compat.cuda_shim import dtype_manager, policies

    fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
    if "dtype" in fields:
        dtype_manager.apply_dtype_policy(fields["dtype"])
    if fields.get("channels_last") == "1":
        policies.set_channels_last_policy(True)
    if fields.get("jit") and fields["jit"] != policies.jit_script_policy():
        policies.set_jit_script_policy(fields["jit"])
