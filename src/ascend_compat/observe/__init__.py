"""Op observation: the layer under every tool that watches the ops a script runs.

* :class:`~.observer.OpObserver` (:mod:`.observer`) - the one ``TorchDispatchMode`` hook; ``audit``'s
  ``FallbackMonitor`` and ``OpRecorder`` (``coverage``), ``profile``'s ``Recorder`` (``perf``) and
  ``compare``'s ``Comparison`` (``accuracy``) subclass it with what they add;
* :mod:`.routing` - how an op runs on torch_npu (native, composite, CPU fallback): the rule, once;
* :mod:`.frames` - the user's source line of an op (:func:`~.frames.user_frame`, :class:`~.frames.Frame`);
* :mod:`.modules` - the ``nn.Module`` path of the running code (:class:`~.modules.ModuleStack`).

Facts about ops (fallback rewrites, dtype refusals, fusion patterns) are not here but in the knowledge
layer (:mod:`ascend_compat.knowledge`), which the tools read. Imported lazily.
"""
from __future__ import annotations

from ascend_compat._lazy import lazy_exports

_EXPORTS = {
    "OpObserver": "ascend_compat.observe.observer",
    "OpCall": "ascend_compat.observe.observer",
    "Frame": "ascend_compat.observe.frames",
    "user_frame": "ascend_compat.observe.frames",
    "ModuleStack": "ascend_compat.observe.modules",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
