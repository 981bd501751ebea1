"""npu backward: which thread runs it, and exceptions raised by backward hooks.

**Thread.** torch's autograd engine runs the backward of every device type except CPU, meta and
lazy on one worker thread per device, so torch_npu's backward runs on "device threads". On real
hardware those threads overlap host bookkeeping with device execution. The simulator computes on
the host, so each backward only pays two cross-thread hand-offs: the caller wakes the device
thread, and the device thread wakes the caller when it is done. On a 2-core VM each hand-off
measured about 0.1 ms of CPU, about a fifth of a small MLP training step.

``"caller"`` (default) runs npu backward on the thread that called it, as CPU backward runs. It
switches torch's own thread-local ``set_multithreading_enabled`` off for the duration of each
engine call and restores it afterwards, so ``torch.autograd.is_multithreading_enabled()`` outside
backward is unchanged. Gradients, hooks, reentrant backward, DDP and checkpointing behave the same.
What differs: backward hooks run on the calling thread, so ``threading.current_thread()`` and
``threading.local`` values inside them are the caller's. ``"device"`` keeps torch's device
threads, as torch_npu has them, for code whose backward hooks depend on the thread they run on.

**Hook exceptions.** When its C++ guard cannot be had, the simulator uses torch's Python device guard
(``torch._C._acc``). When a Python backward hook raises, torch unwinds the engine with the
Python error still pending, and the stream guard's ``noexcept`` destructor calls that guard, which
calls into Python and fails: the process aborts ("terminate called without an active exception",
torch 2.13 and 2.14.1). Real torch_npu, and the simulator's C++ guard, raise
the hook's exception instead. So while the Python guard is in use, hooks registered through
``Tensor.register_hook``, ``Tensor.register_post_accumulate_grad_hook`` and on custom-Function
nodes (module full backward hooks and pre-hooks use those) are wrapped: an exception is kept,
the hook returns a gradient of the wrong size instead, which makes the engine stop with a plain
C++ error (nothing pending in Python), and the engine entry re-raises the kept exception with its
own traceback. The deprecated ``Module.register_backward_hook`` is covered through the
``_WrappedHook`` it registers. Hooks a user registers directly on a built-in node
(``y.grad_fn.register_hook``) cannot be wrapped (those node types are immutable C types) and
still abort.
"""
from __future__ import annotations

import functools
import threading

import torch

from ascend_compat.simulator import _host

MODES = ("caller", "device")

_is_enabled = torch._C._is_multithreading_enabled
_set_enabled = torch._C._set_multithreading_enabled

_failed: list = []  # exceptions raised by wrapped hooks, oldest first (hooks may run on device threads)
_failed_lock = threading.Lock()


def _take_failure():
    """The oldest kept hook exception, or None."""
    if not _failed:
        return None
    with _failed_lock:
        return _failed.pop(0) if _failed else None


class SimulatorEngine(torch._C._ImperativeEngine):
    """torch's engine; re-raises kept hook exceptions and, if ``caller_thread``, keeps npu backward
    on the calling thread."""

    caller_thread = True

    def run_backward(self, *args, **kwargs):
        if _failed:  # left by a backward started from C++ (not through here): not this call's
            with _failed_lock:
                _failed.clear()
        switch = self.caller_thread and _is_enabled()  # off already: the user's choice, or reentrant
        if switch:
            _set_enabled(False)
        try:
            result = super().run_backward(*args, **kwargs)
        except RuntimeError:
            failed = _take_failure()
            if failed is None:
                raise
        else:
            failed = _take_failure()  # a hook with nothing to poison: backward finished first
        finally:
            if switch:
                _set_enabled(True)
        if failed is not None:  # raised outside the except block: no engine error chained to it
            raise failed.with_traceback(failed.__traceback__)
        return result


def _poison(value):
    """A gradient the engine rejects with a C++ error: the wrong size, or a value where None was."""
    if isinstance(value, torch.Tensor):
        return value.new_empty(value.numel() + 1)
    return _host.empty(1)


def _keep(exc: BaseException) -> None:
    with _failed_lock:
        _failed.append(exc)


def _guard_hook(hook, poison):
    """``hook``, with an exception kept and replaced by ``poison(*args)`` (see module docstring)."""
    @functools.wraps(hook)
    def guarded(*args):
        try:
            return hook(*args)
        except BaseException as exc:
            _keep(exc)
            return poison(*args)
    return guarded


def _poison_first(value, *_):
    return _poison(value)


def _poison_tuple(grads, *_):
    return tuple(_poison(g) for g in grads) if grads else None


def _guarding(register, poison, npu_only: bool):
    """A hook-registration method like ``register`` that registers the guarded hook instead
    (for npu tensors only when ``npu_only``)."""
    @functools.wraps(register)
    def guarded_register(self, hook):
        if callable(hook) and (not npu_only or self.device.type == "npu"):
            hook = _guard_hook(hook, poison)
        return register(self, hook)
    return guarded_register


def _wrap_tensor_hooks() -> None:
    tensor = torch.Tensor
    tensor.register_hook = _guarding(tensor.register_hook, _poison_first, npu_only=True)
    tensor.register_post_accumulate_grad_hook = _guarding(
        tensor.register_post_accumulate_grad_hook, _poison_first, npu_only=True)


def _wrap_function_node_hooks() -> None:
    # custom autograd.Function nodes are instances of Python subclasses of BackwardCFunction, so
    # their hook registration can be overridden there (module backward hooks go through it)
    from torch.autograd.function import BackwardCFunction

    BackwardCFunction.register_hook = _guarding(BackwardCFunction.register_hook, _poison_tuple, npu_only=False)
    BackwardCFunction.register_prehook = _guarding(BackwardCFunction.register_prehook, _poison_tuple,
                                                   npu_only=False)


def _wrap_module_non_full_backward_hooks() -> None:
    # Module.register_backward_hook (deprecated) puts _WrappedHook(hook, module) on the output's
    # built-in grad_fn node, which cannot be wrapped; the _WrappedHook call itself can. The same
    # class wraps state-dict hooks, so only calls made by the engine (a node is being evaluated)
    # with npu gradients are guarded.
    from torch.nn.modules import module as module_mod

    cls = getattr(module_mod, "_WrappedHook", None)
    if cls is None:
        return
    call = cls.__call__

    def guarded_call(self, *args, **kwargs):
        if kwargs or len(args) != 2 or torch._C._current_autograd_node() is None:
            return call(self, *args, **kwargs)
        try:
            return call(self, *args)
        except BaseException as exc:
            if not any(isinstance(g, torch.Tensor) and g.device.type == "npu" for g in args[0] or ()):
                raise
            _keep(exc)
            return _poison_tuple(args[0])

    cls.__call__ = guarded_call


def apply(mode: str, python_guard: bool) -> None:
    """Install the engine for ``mode`` (one of :data:`MODES`) and, when torch's Python device
    guard is in use (``python_guard``), the hook wrappers. Called once by ``install()``."""
    if mode != "caller" and not python_guard:
        return  # torch's own engine already does what "device" asks
    from torch.autograd.variable import Variable

    engine = SimulatorEngine()
    engine.caller_thread = mode == "caller"
    # Every Python entry (Tensor.backward, autograd.backward/grad) and DDP/FSDP's
    # queue_callback look the engine up here at call time.
    Variable._execution_engine = engine
    if python_guard:
        _wrap_tensor_hooks()
        _wrap_function_node_hooks()
        _wrap_module_non_full_backward_hooks()
