"""Cross-rank diagnosis of a distributed job's logs: which rank broke it, and how the others failed.

``diagnose_paths(["logs/"])`` reads every log of the job (CANN plogs, torchrun's per-rank files,
launcher output, a directory per node: :mod:`.sources`), gathers per-rank facts while streaming each
file (:mod:`.facts`), and applies the fault-chain rules (:mod:`.chain`) that MindCluster's
``ascend-fd diag`` applies to separate the root cause from its consequences. :mod:`.report` renders
the :class:`~.chain.Diagnosis`.
"""
from __future__ import annotations

from typing import Iterable, Optional

from ascend_compat.errors.crossrank.chain import Diagnosis, diagnose
from ascend_compat.errors.crossrank.facts import JobFacts
from ascend_compat.errors.crossrank.sources import discover

__all__ = ["diagnose_paths", "Diagnosis"]


def diagnose_paths(paths: Iterable[str], progress: Optional[callable] = None) -> Diagnosis:
    """Diagnose the job whose logs are ``paths`` (directories and files). ``progress(done, total)`` is
    called after each file. Raises OSError for a missing path; unreadable or binary files are skipped."""
    from ascend_compat.errors.logscan import LogReadError, iter_log_text

    from ascend_compat.errors.crossrank.sources import PLOG, RANK_LOG

    order = {PLOG: 0, RANK_LOG: 1}
    sources = sorted(discover(paths), key=lambda s: order.get(s.kind, 2))  # rank logs before launcher copies
    facts = JobFacts()
    for i, source in enumerate(sources):
        try:
            facts.read(source, iter_log_text)
        except LogReadError:
            pass
        if progress is not None:
            progress(i + 1, len(sources))
    return diagnose(facts)
