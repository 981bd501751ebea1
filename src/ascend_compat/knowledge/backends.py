"""Distributed backend names in CUDA code and their Ascend counterparts (records of kind ``"backend"``).

:func:`rewrite` is the translation the shim applies to ``init_process_group`` / ``new_group``
backends and check suggests: ``"nccl"`` -> ``"hccl"``, ``"cuda:nccl"`` -> ``"npu:hccl"``,
``"cpu:gloo,cuda:nccl"`` -> ``"cpu:gloo,npu:hccl"``; other backends (gloo, mpi) stay.
"""
from __future__ import annotations

from typing import Any

from ascend_compat.knowledge.devices import TARGET
from ascend_compat.knowledge.records import AUTO, PARTIAL, Construct, Versions

#: CUDA collective backend -> Ascend collective backend
BACKENDS = {"nccl": "hccl"}
#: torch.distributed calls whose first positional argument is the backend (``backend=`` is their keyword)
BACKEND_CALLS = frozenset({"init_process_group", "new_group", "new_subgroups", "new_subgroups_by_enumeration"})


def rewrite(value: Any, target: str = TARGET) -> Any:
    """The Ascend form of a backend string (see the module docstring); non-strings pass through unchanged."""
    if not isinstance(value, str):
        return value
    low = value.strip().lower()
    if low in BACKENDS:
        return BACKENDS[low]
    if ":" not in low:
        return value
    parts, changed = [], False
    for item in low.split(","):
        dev, _, be = item.strip().partition(":")
        if dev == "cuda":
            dev, changed = target, True
        if be in BACKENDS:
            be, changed = BACKENDS[be], True
        parts.append(f"{dev}:{be}" if be else dev)
    return ",".join(parts) if changed else value


def _group(backend: str, body: str) -> str:
    """A one-process group with ``backend`` around ``body`` (a file store: no port to collide)."""
    return ("import os, tempfile, torch, torch.distributed as dist\n"
            "store = tempfile.mkdtemp() + '/store'\n"
            f"dist.init_process_group({backend!r}, init_method='file://' + store, rank=0, world_size=1)\n"
            f"try:\n{body}finally:\n    dist.destroy_process_group()\n")


#: an all_reduce of a CPU and of an npu tensor; prints which ran
_CPU_AND_NPU = ("    dist.all_reduce(torch.ones(1))\n    try:\n"
                "        dist.all_reduce(torch.ones(1, device='cuda'))\n"
                "        print('cpu ok, npu ok')\n    except RuntimeError:\n"
                "        print('cpu ok, npu refused')\n")

RECORDS: tuple[Construct, ...] = (
    Construct("backend", '"nccl"', "nccl-backend", AUTO, '"hccl"',
              "the shim maps nccl to hccl in init_process_group, new_group and split_group",
              'use backend="hccl".',
              _group("nccl", "    x = torch.ones(2, device='cuda')\n    dist.all_reduce(x)\n"
                             "    print(x.device.type, str(dist.get_backend()))\n"),
              "npu hccl", rewrite=('"nccl"', '"hccl"')),
    Construct("backend", 'dist.get_backend() == "nccl"', "nccl-backend", AUTO, 'dist.get_backend() == "hccl"',
              "under the shim get_backend() returns hccl as a name that also equals nccl",
              'compare with "hccl".',
              _group("nccl", "    x = torch.ones(2, device='cuda')\n    dist.all_reduce(x)\n"
                             "    print(dist.get_backend() == 'nccl', x.device.type)\n"),
              "True npu", rewrite=('"nccl"', '"hccl"')),
    Construct("backend", '"cuda:nccl,cpu:gloo"', "nccl-backend", AUTO, '"npu:hccl,cpu:gloo"',
              "the shim maps each device:backend pair, cuda:nccl to npu:hccl",
              'use "npu:hccl,cpu:gloo".',
              _group("cuda:nccl,cpu:gloo", "    x = torch.ones(2, device='cuda')\n    dist.all_reduce(x)\n"
                                           "    print(x.device.type, str(dist.get_backend()))\n"),
              "npu npu:hccl,cpu:gloo", rewrite=('"cuda:nccl,cpu:gloo"', '"npu:hccl,cpu:gloo"'),
              versions=Versions(torch=">=2.0")),
    Construct("backend", "dist.is_nccl_available()", "nccl-backend", AUTO, "dist.is_hccl_available()",
              "under the shim it reports whether hccl is available",
              "use torch.distributed.is_hccl_available().",
              "import torch, torch.distributed as dist\n"
              "print(dist.is_nccl_available(), torch.ones(1, device='cuda').device.type)", "True npu"),
    Construct("backend", "ProcessGroupNCCL", "nccl-backend", AUTO, "torch_npu ProcessGroupHCCL",
              "the shim binds torch.distributed's ProcessGroupNCCL names to torch_npu's ProcessGroupHCCL",
              "use torch_npu's ProcessGroupHCCL.",
              "import torch\nfrom torch.distributed import ProcessGroupNCCL\n"
              "print(ProcessGroupNCCL.__name__, torch.ones(1, device='cuda').device.type)", "ProcessGroupHCCL npu"),
    Construct("backend", '"gloo"', "gloo-backend", PARTIAL, '"cpu:gloo,npu:hccl"',
              "gloo runs collectives on CPU tensors only on Ascend (on CUDA machines it also takes CUDA tensors), "
              "so a collective on an NPU tensor raises",
              'use "cpu:gloo,npu:hccl" to keep gloo for CPU tensors and run NPU tensors over hccl.',
              _group("gloo", _CPU_AND_NPU), "cpu ok, npu refused",
              fixed=_group("cpu:gloo,npu:hccl", _CPU_AND_NPU), fixed_expect="cpu ok, npu ok"),
)

BY_NAME: dict[str, Construct] = {r.name: r for r in RECORDS}

#: qualified names check resolves -> the record stating their counterpart
BY_QUALNAME: dict[str, Construct] = {
    "torch.distributed.is_nccl_available": BY_NAME["dist.is_nccl_available()"],
    **{f"{where}.ProcessGroupNCCL": BY_NAME["ProcessGroupNCCL"]
       for where in ("torch.distributed", "torch._C._distributed_c10d", "torch.distributed.distributed_c10d")},
}
