"""Recording a run for the whole-run drift comparison (:mod:`.runrecord`, :mod:`.drift`).

:class:`RunRecorder` is a context manager around a script (or a few steps). While it is active it
keeps, per step (a step ends at each ``optimizer.step()``):

* every ``backward()`` call's loss value (a one-element tensor);
* each module's input and output sketch (:func:`.runrecord.stats`: the first floating tensor among its
  arguments and in its result), in the order the forwards finish, with the module path, the how-many-th
  call of that module in the step, and the user's source line of the call;
* each parameter's gradient sketch when ``optimizer.step()`` starts (named ``Root.sub.weight``);
* with ``ops=True``, during the first ``op_steps`` steps, the output sketch of every op that runs while
  a module is active, with its module path, phase (forward/backward) and source line - an op observer
  (:class:`ascend_compat.observe.OpObserver`).

It watches the thread that entered it and works on any device (CUDA with the shim off, the simulated
NPU, real NPUs, the CPU): it reads values, never changes them.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Dict, List, Optional

from ascend_compat.accuracy.runrecord import RunRecord, first_floating, stats
from ascend_compat.observe.modules import ModuleStack
from ascend_compat.observe.frames import user_frame

__all__ = ["RunRecorder"]


def _precision(out) -> Dict[str, Any]:
    """What the run computes in by design where ``out`` was made: autocast's dtype on its device (None when
    off) and the op groups torch_npu's HF32 switches are on for (``["conv", "matmul"]``)."""
    import torch

    from ascend_compat.accuracy.hostrun import hf32_switches

    autocast = None
    device = out.device.type if out is not None else "cpu"
    try:
        if torch.is_autocast_enabled(device):
            autocast = str(torch.get_autocast_dtype(device)).replace("torch.", "")
    except (TypeError, RuntimeError):  # torch < 2.4, or a device autocast does not know
        pass
    return {"autocast": autocast, "hf32": sorted(group for group, on in hf32_switches().items() if on)}


class _Modules(ModuleStack):
    """The module stack, also keeping each module's input sketch and recording its output at the end."""

    def __init__(self, recorder: "RunRecorder") -> None:
        super().__init__()
        self.recorder = recorder
        self._inputs: List[Optional[Dict[str, Any]]] = []
        self.params: Dict[int, str] = {}

    def _enter(self, module, args) -> None:
        if threading.get_ident() != self._thread:
            return
        if not self._stack:
            root = type(module).__name__
            for name, p in module.named_parameters():
                self.params.setdefault(id(p), f"{root}.{name}")
        super()._enter(module, args)
        first = first_floating(args) if self.recorder.record.recording else None
        self._inputs.append(stats(first) if first is not None else None)

    def _leave(self, module, args, output) -> None:
        if threading.get_ident() != self._thread or not self._stack:
            return
        path = self._stack[-1]
        inputs = self._inputs.pop() if self._inputs else None
        rec = self.recorder
        if rec.record.recording:
            out = first_floating(output)
            calls = rec.calls
            calls[path] = calls.get(path, 0) + 1
            rec.record.add_module(path, calls[path], user_frame(2), inputs, stats(out) if out is not None else None,
                                  _precision(out))
        super()._leave(module, args, output)

    def clear(self) -> None:
        super().clear()
        self._inputs.clear()


class RunRecorder:
    """Record a run into :attr:`record` (a :class:`~.runrecord.RunRecord`; see the module docstring)."""

    def __init__(self, run: Optional[Dict[str, Any]] = None, max_steps: Optional[int] = None, op_steps: int = 1,
                 ops: bool = True) -> None:
        self.record = RunRecord(run, max_steps=max_steps, op_steps=op_steps)
        self.calls: Dict[str, int] = {}
        self.modules = _Modules(self)
        self.ops = ops
        self._hooks: List[Any] = []
        self._losses = None
        self._observer = None

    # ------------------------------------------------------------------ hooks
    def _grads(self, optimizer, *args, **kwargs) -> None:
        if threading.get_ident() != self.modules._thread or not self.record.recording:
            return
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    name = self.modules.params.get(id(p), f"<param {tuple(p.shape)}>")
                    self.record.add_grad(name, stats(p.grad))

    def _step_done(self, optimizer, *args, **kwargs) -> None:
        if threading.get_ident() != self.modules._thread:
            return
        self.record.end_step()
        self.calls.clear()
        self.modules.clear()
        if self._observer is not None:
            self._observer.calls.clear()

    def loss(self, tensor) -> None:
        """A ``backward()`` of ``tensor`` (called by the loss hook)."""
        if tensor.numel() == 1 and self.record.recording:
            self.record.add_loss(stats(tensor)["mean"])

    # ------------------------------------------------------------------ enter / exit
    def __enter__(self) -> "RunRecorder":
        from torch.optim import optimizer as optim_module

        self.modules.install()
        self._hooks = [optim_module.register_optimizer_step_pre_hook(self._grads),
                       optim_module.register_optimizer_step_post_hook(self._step_done)]
        self._losses = _LossHook(self)
        self._losses.__enter__()
        if self.ops:
            from ascend_compat.accuracy.op_record import OpStatsObserver

            self._observer = OpStatsObserver(self)
            self._observer.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        if self._observer is not None:
            self._observer.__exit__(*exc_info)
            self._observer = None
        if self._losses is not None:
            self._losses.__exit__(*exc_info)
            self._losses = None
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        self.modules.remove()


class _LossHook:
    """Notes each ``torch.autograd.backward()`` (which ``Tensor.backward()`` calls) of a one-element tensor:
    the function is wrapped while the recorder is active and restored afterwards."""

    def __init__(self, recorder: RunRecorder) -> None:
        self.recorder = recorder
        self._original = None

    def __enter__(self) -> "_LossHook":
        import torch.autograd

        original = self._original = torch.autograd.backward
        recorder = self.recorder

        @functools.wraps(original)
        def backward(tensors, *args, **kwargs):
            if threading.get_ident() == recorder.modules._thread and hasattr(tensors, "numel"):
                recorder.loss(tensors)
            return original(tensors, *args, **kwargs)

        torch.autograd.backward = backward
        return self

    def __exit__(self, *exc_info) -> None:
        import torch.autograd

        if self._original is not None:
            torch.autograd.backward = self._original
            self._original = None
