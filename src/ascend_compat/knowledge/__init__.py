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

Facts about single ops (``operators``: CPU-fallback rewrites, the dtypes torch_npu refuses per op,
the float64 downcast rule) are read by the tools that watch ops (``audit``, ``profile``, ``compare``)
and by the simulated NPU; ``numerics`` names what Ascend computes differently from CUDA by design (HF32,
float64 run in float32) with the switch that controls it, for ``compare``'s "as on Ascend" section.
"""
from ascend_compat.knowledge.records import (AUTO, EVERY, MANUAL, PARTIAL, VERDICTS, Construct, CudaName, EnvVar,
                                             Library, Switch, Versions)
from ascend_compat.knowledge import (backends, compile, cuda_names, devices, env_vars, extensions, hccl_env, libraries,
                                     numerics, operators, rank_table)

__all__ = ["AUTO", "PARTIAL", "MANUAL", "VERDICTS", "EVERY", "Versions", "EnvVar", "Library", "Construct", "CudaName",
           "Switch", "cuda_names", "env_vars", "libraries", "devices", "backends", "extensions", "compile", "numerics",
           "operators", "hccl_env", "rank_table"]
