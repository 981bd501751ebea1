"""The Ascend facts ascend-compat acts on, as typed records (one copy of each fact).

Records: ``cuda_names`` (:class:`CudaName`, every public ``torch.cuda`` name), ``env_vars``, ``libraries``, ``devices``
(device strings and device tests), ``backends`` (distributed backend names), ``extensions`` (C++/CUDA
extension builds); parsers of a cluster job's set-up: ``hccl_env`` (the HCCL variables, read as torch_npu
and HCCL read them) and ``rank_table`` (HCCL's rank table file). Readers: the runtime shim (``cuda_shim``: env, device and backend translation,
extension refusals), ``check``'s rules (``analysis/rules``) and, through those, ``migrate``; the
simulator and doctor where they state the same facts. Each record carries a verdict (``auto`` /
``partial`` / ``manual``: what happens on Ascend without editing the code), the reason, one advice
sentence, the versions it applies to (:class:`Versions`) and a minimal example that
``tests/knowledge`` runs under the simulated NPU to prove the verdict.
"""
from ascend_compat.knowledge.records import (AUTO, EVERY, MANUAL, PARTIAL, VERDICTS, Construct, CudaName, EnvVar,
                                             Library, Versions)
from ascend_compat.knowledge import backends, cuda_names, devices, env_vars, extensions, hccl_env, libraries, rank_table

__all__ = ["AUTO", "PARTIAL", "MANUAL", "VERDICTS", "EVERY", "Versions", "EnvVar", "Library", "Construct", "CudaName",
           "cuda_names", "env_vars", "libraries", "devices", "backends", "extensions", "hccl_env", "rank_table"]
