"""Keep ``torch.compile``'s tracer out of the simulator's own Python.

The simulated device runs its kernels in Python (the boxed fallback, direct kernels, special ops,
the torch_npu stand-in's references). Dynamo compiles every Python frame that runs while a compiled
function executes (after a graph break, eager code runs under its frame hook) and treats any file
outside torch as user code: it would trace the simulator's kernels (``_special_ops._empty``,
``_float64.to_copy``...) into graphs, which fails with fake tensors ("Cannot call numel() on tensor
with symbolic sizes", "you set no_dispatch()"). Real torch_npu's kernels are C++, invisible to it.
:func:`register` adds the simulator's package to dynamo's skipped files, as torch's own are, when
dynamo's ``trace_rules`` is imported (now, if it already is): dynamo runs those frames as they are,
and a direct call into the simulator from compiled code is a graph break.
"""
from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_RULES = "torch._dynamo.trace_rules"


def _skip() -> None:
    from torch._dynamo import trace_rules

    if _PACKAGE_DIR not in trace_rules.SKIP_DIRS:
        trace_rules.SKIP_DIRS.append(_PACKAGE_DIR)
        trace_rules._recompile_re()


def register() -> None:
    """Skip the simulator's files in dynamo (once dynamo is imported; idempotent)."""
    if _RULES in sys.modules:
        _skip()
        return
    from ascend_compat.simulator._stand_in import AfterImport

    if not any(isinstance(f, AfterImport) and f.name == _RULES for f in sys.meta_path):
        sys.meta_path.insert(0, AfterImport(_RULES, _skip))
