"""Start-up hook for the child processes of a shimmed process (see :mod:`ascend_compat._inherit`).

This directory is put first on ``PYTHONPATH`` while a process is shimmed, so every Python process it
starts - by ``subprocess``, ``multiprocessing`` (spawn), ``torch.multiprocessing.spawn``, a
DataLoader worker, Lightning's, DeepSpeed's or accelerate's launcher - imports this module at
start-up. It imports nothing of ascend-compat yet: it waits for the child's first ``import torch``
and only then hands over to :func:`ascend_compat._inherit.boot`, so a child that never uses torch
starts as fast as before. Finally it runs the interpreter's own ``sitecustomize`` (the next one on
``sys.path``), which this module would otherwise hide.
"""
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _activate():
    if importlib.util.find_spec("ascend_compat") is None:  # another interpreter, without ascend-compat
        sys.stderr.write(f"ascend-compat: {sys.executable} cannot import ascend_compat, so CUDA calls in this "
                         "child process are not translated to the NPU; install ascend-compat in its "
                         "environment\n")
        return
    policies = os.environ.get("ASCEND_COMPAT_INHERIT_POLICIES", "")  # before activation re-exports them
    from ascend_compat import _inherit  # importing the package activates the shim

    _inherit.boot(policies)


class _AfterTorch(importlib.abc.MetaPathFinder):
    """Runs :func:`_activate` right after ``torch`` has been imported, then steps aside.

    Only the import itself consumes it: ``importlib.util.find_spec("torch")``, ``pkgutil.find_loader``
    and the like (which transformers, datasets, peft and accelerate call before importing torch) get a
    spec whose loader would activate the shim if it ran, and the finder stays in place for the real
    import. ``importlib.metadata`` and ``pkgutil.iter_modules`` never reach a meta path finder.
    """

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module
        finder = self

        def run_then_activate(module):
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
            exec_module(module)
            _activate()

        spec.loader.exec_module = run_then_activate
        return spec


def _boot():
    if not os.environ.get("ASCEND_COMPAT_INHERIT"):
        return
    if os.environ.get("ASCEND_COMPAT_NO_INHERIT", "").strip().lower() in ("1", "true", "yes", "on"):
        return
    if "torch" in sys.modules:
        _activate()
    else:
        sys.meta_path.insert(0, _AfterTorch())


def _chain():
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


_boot()
_chain()
