"""Start-up hook for the child processes of a shimmed process (see :mod:`ascend_compat._inherit`).

This directory is put first on ``PYTHONPATH`` while a process is shimmed, so every Python process it
starts - by ``subprocess``, ``multiprocessing`` (spawn), ``torch.multiprocessing.spawn``, a
DataLoader worker, Lightning's or DeepSpeed's or accelerate's launcher - imports this module at
start-up. It hands over to :func:`ascend_compat._inherit.boot`, then runs the interpreter's own
``sitecustomize`` (the next one on ``sys.path``), which this module would otherwise hide.
"""
import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _boot():
    if not os.environ.get("ASCEND_COMPAT_INHERIT"):
        return
    if importlib.util.find_spec("ascend_compat") is None:  # another interpreter, without ascend-compat
        sys.stderr.write(f"ascend-compat: {sys.executable} cannot import ascend_compat, so CUDA calls in this "
                         "child process are not translated to the NPU; install ascend-compat in its "
                         "environment\n")
        return
    from ascend_compat import _inherit

    _inherit.boot()


def _chain():
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


_boot()
_chain()
