"""Which ``nn.Module`` is running: a stack kept by global module forward hooks, for the observers
that attribute ops to modules (the performance advisor, the accuracy comparison).

Names are the dotted paths of the outermost module called (``GPT.blocks.0.attn``); only the thread
that installed the stack is tracked.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, List


class ModuleStack:
    """``install()`` the hooks, read :meth:`current`, ``remove()`` them; :meth:`clear` between steps."""

    def __init__(self) -> None:
        self._stack: List[str] = []
        self._names: Dict[int, str] = {}
        self._handles: List[Any] = []
        self._thread = threading.get_ident()

    def install(self) -> "ModuleStack":
        from torch.nn.modules import module as nn_module

        self._thread = threading.get_ident()
        self._handles = [nn_module.register_module_forward_pre_hook(self._enter),
                         nn_module.register_module_forward_hook(self._leave)]
        return self

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def current(self) -> str:
        return self._stack[-1] if self._stack else ""

    def clear(self) -> None:
        self._stack.clear()

    def _enter(self, module, args) -> None:
        if threading.get_ident() != self._thread:
            return
        if not self._stack:
            root = type(module).__name__
            for name, sub in module.named_modules():
                self._names[id(sub)] = f"{root}.{name}" if name else root
        self._stack.append(self._names.get(id(module), type(module).__name__))

    def _leave(self, module, args, output) -> None:
        if threading.get_ident() == self._thread and self._stack:
            self._stack.pop()
