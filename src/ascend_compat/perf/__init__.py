"""Performance advisor: why a training step will be slow on Ascend, and where in the source.

::

    from ascend_compat.perf import profile

    with profile(steps=3, warmup=1) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()              # or let optimizer.step() mark the steps: profile(auto_step=True)
    print(prof.report().text())      # findings, each with path:line, weight and fix

Every op the recorded steps run on the NPU is observed through a ``TorchDispatchMode`` (so the
same recorder works on real torch_npu and on the simulated NPU) together with the user's source
line and the ``nn.Module`` path it ran in. :mod:`.rules` turns the record into findings
(CPU fallbacks, device-to-host synchronisations, host-to-device copies and tensors built from
Python data inside the step, shape churn, fp32 matmul/conv FLOPs, launch-bound tiny ops,
non-contiguous or format-changing matmul/conv inputs, op-by-op optimisers and losses);
:mod:`.report` prints them as text, JSON or a Chrome trace. :mod:`.npu_trace` reads the same
facts from a trace exported by torch_npu's (or torch's) profiler on the cluster.

Imported lazily: ``import ascend_compat.perf`` loads nothing else.
"""
from __future__ import annotations

from ascend_compat._lazy import lazy_exports

_EXPORTS = {
    "profile": "ascend_compat.perf.record",
    "Recorder": "ascend_compat.perf.record",
    "StopProfiling": "ascend_compat.perf.record",
    "Finding": "ascend_compat.perf.report",
    "Report": "ascend_compat.perf.report",
    "analyze": "ascend_compat.perf.rules",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
