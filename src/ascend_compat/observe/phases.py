"""Which part of a training script is running: training steps, evaluation, checkpointing or set-up.

A :class:`PhaseTracker` answers :meth:`~PhaseTracker.current` for every op from what the script is
doing, not from where the op was written:

* ``checkpoint`` - inside ``torch.save`` / ``torch.load`` or a ``state_dict`` / ``load_state_dict`` (a
  module's or an optimizer's): their copies between device and host serve the checkpoint, not the step;
* ``train`` - inside ``optimizer.step()`` (any optimizer, fused or not; ``GradScaler.step`` too), inside
  backward (an autograd node is running), or inside the forward of a module in training mode with
  gradients enabled;
* ``eval`` - inside the forward of a module in evaluation mode (``model.eval()``) or with gradients
  disabled (``torch.no_grad()``, ``torch.inference_mode()``, ``@torch.no_grad() def generate``), and from
  the moment a model that has trained is put in evaluation mode (``model.eval()``: what the evaluation
  prepares before its first forward belongs to it);
* outside all of these, the phase the script was last in: the ops of an evaluation loop after the
  model's forward (``loss.item()``, metrics, sampling in ``generate``) are evaluation while gradients
  stay disabled or the evaluated model stays in eval mode (``model.train()`` or leaving ``no_grad``
  ends it); the loss computed after a training forward and the batch copied before the next one are
  training;
* ``setup`` - everything before the first training forward, backward or optimizer step (model
  construction, ``model.to(device)``, data preparation), when the tracker starts in set-up.

The outermost module call decides (a submodule in eval mode inside a training model, such as a
frozen embedding, stays training). A frozen model's ``no_grad`` forward inside a training step (a
distillation teacher) counts as evaluation: that is the limit of telling phases from what runs.
Only the thread that installed the tracker is followed.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, List, Optional, Tuple

__all__ = ["TRAIN", "EVAL", "CHECKPOINT", "SETUP", "PHASES", "PhaseTracker"]

TRAIN, EVAL, CHECKPOINT, SETUP = "train", "eval", "checkpoint", "setup"
#: every phase, in the order reports list them
PHASES = (TRAIN, EVAL, CHECKPOINT, SETUP)

#: (module, attribute) of the functions whose work is checkpointing
_CHECKPOINT_FUNCTIONS = (("torch", "save"), ("torch", "load"), ("torch.serialization", "save"),
                         ("torch.serialization", "load"), ("torch.nn.modules.module.Module", "state_dict"),
                         ("torch.nn.modules.module.Module", "load_state_dict"),
                         ("torch.optim.optimizer.Optimizer", "state_dict"),
                         ("torch.optim.optimizer.Optimizer", "load_state_dict"))


class PhaseTracker:
    """Follows the phase of the running script (see the module docstring).

    ``start``: the phase before any training signal (``setup`` when the tracker wraps a whole script,
    ``train`` when it wraps a training loop). ``on_optimizer_step``: called after each outermost
    ``optimizer.step()`` (the step boundary of the tools that count steps).
    """

    def __init__(self, start: str = SETUP, on_optimizer_step: Optional[Callable[[], None]] = None) -> None:
        if start not in PHASES:
            raise ValueError(f"start must be one of {', '.join(PHASES)}, got {start!r}")
        self._sticky = start
        self._forward: Optional[str] = None  # phase of the outermost module forward running
        self._before_eval = start  # the phase an evaluation returns to
        self._eval_module: Any = None  # weakref to the module of the last evaluation forward
        self._depth = 0
        self._checkpoint = 0
        self.in_optimizer = 0
        self.trained = start == TRAIN  # a training signal was seen
        self._on_step = on_optimizer_step
        self._thread = threading.get_ident()
        self._handles: List[Any] = []
        self._patched: List[Tuple[Any, str, Any]] = []
        self._roots: "weakref.WeakSet[Any]" = weakref.WeakSet()  # outermost modules of training forwards

    def current(self) -> str:
        """The phase of the op running now."""
        if self._checkpoint:
            return CHECKPOINT
        if self.in_optimizer:
            return TRAIN
        if self._forward is not None:
            return self._forward
        if self._sticky == EVAL and not self._still_evaluating():
            self._sticky = self._before_eval
        if self._sticky != TRAIN and _autograd_node() is not None:
            self._train()
        return self._sticky

    def _still_evaluating(self) -> bool:
        import torch

        if not torch.is_grad_enabled():
            return True
        module = self._eval_module() if self._eval_module is not None else None
        return module is not None and not module.training

    def _train(self) -> None:
        self._sticky = self._before_eval = TRAIN
        self.trained = True

    # ------------------------------------------------------------------ hooks
    def install(self) -> "PhaseTracker":
        import torch
        from torch.nn.modules import module as nn_module
        from torch.optim import optimizer as optim_module

        self._thread = threading.get_ident()
        self._handles = [nn_module.register_module_forward_pre_hook(self._enter),
                         nn_module.register_module_forward_hook(self._leave, always_call=True),
                         optim_module.register_optimizer_step_pre_hook(self._optimizer_pre),
                         optim_module.register_optimizer_step_post_hook(self._optimizer_post)]
        for owner_name, attr in _CHECKPOINT_FUNCTIONS:
            owner = _resolve(torch, owner_name)
            original = owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)
            self._patched.append((owner, attr, original))
            setattr(owner, attr, self._checkpointing(original))
        module_class = torch.nn.Module
        original_train = module_class.__dict__["train"]
        self._patched.append((module_class, "train", original_train))
        module_class.train = self._mode_switch(original_train)
        return self

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        for owner, attr, original in reversed(self._patched):
            setattr(owner, attr, original)
        self._patched = []

    def _mine(self) -> bool:
        return threading.get_ident() == self._thread

    def _enter(self, module, args) -> None:
        if not self._mine():
            return
        self._depth += 1
        if self._depth == 1 and not self._checkpoint and not self.in_optimizer:
            import torch

            self._forward = TRAIN if module.training and torch.is_grad_enabled() else EVAL
            if self._forward == TRAIN:
                self._train()
                self._roots.add(module)
            else:
                if self._sticky != EVAL:
                    self._before_eval = self._sticky
                self._sticky = EVAL
                self._eval_module = weakref.ref(module)

    def _leave(self, module, args, output) -> None:
        if not self._mine() or self._depth == 0:
            return
        self._depth -= 1
        if self._depth == 0:
            self._forward = None

    def _optimizer_pre(self, optimizer, args, kwargs) -> None:
        if self._mine():
            self.in_optimizer += 1
            self._train()

    def _optimizer_post(self, optimizer, args, kwargs) -> None:
        if not self._mine():
            return
        self.in_optimizer = max(0, self.in_optimizer - 1)
        if self.in_optimizer == 0 and self._on_step is not None:
            self._on_step()

    def _evaluating(self, module) -> None:
        """``module.eval()`` of a model that has trained: the evaluation starts here."""
        if self._sticky == TRAIN and self._mine() and module in self._roots:
            self._before_eval = TRAIN
            self._sticky = EVAL
            self._eval_module = weakref.ref(module)

    def _mode_switch(self, original):
        import functools

        tracker = self

        @functools.wraps(original)
        def train(module, mode: bool = True):
            result = original(module, mode)
            if not mode:
                tracker._evaluating(module)
            return result
        return train

    def _checkpointing(self, original):
        import functools

        tracker = self

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            mine = tracker._mine()
            if mine:
                tracker._checkpoint += 1
            try:
                return original(*args, **kwargs)
            finally:
                if mine:
                    tracker._checkpoint -= 1
        return wrapper


def _resolve(torch, dotted: str):
    import importlib

    module_name, _, cls = dotted.rpartition(".")
    if dotted == "torch":
        return torch
    if cls and cls[:1].isupper():
        return getattr(importlib.import_module(module_name), cls)
    return importlib.import_module(dotted)


def _autograd_node():
    import torch

    return torch._C._current_autograd_node()
