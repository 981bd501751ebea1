"""The Ascend facts ascend-compat acts on, as typed records (one copy of each fact).

Records: ``cuda_names`` (every public ``torch.cuda`` name), ``env_vars``, ``libraries``. Readers: the
runtime shim's tables (``cuda_shim/mapping``), ``check``'s rules (``analysis/rules``) and, through
those, ``migrate``. Each record carries a verdict (``auto`` / ``partial`` /
``manual``: what happens on Ascend without editing the code), the reason, one advice sentence and a
minimal example that ``tests/knowledge`` runs under the simulated NPU to prove the verdict.
"""
from ascend_compat.knowledge.records import AUTO, MANUAL, PARTIAL, VERDICTS, EnvVar, Library
from ascend_compat.knowledge import cuda_names, env_vars, libraries

__all__ = ["AUTO", "PARTIAL", "MANUAL", "VERDICTS", "EnvVar", "Library", "cuda_names", "env_vars", "libraries"]
