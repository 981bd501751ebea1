"""``torch.compile`` on Ascend (records of kind ``"compile"``).

What torch_npu offers (Ascend/pytorch ``torch_npu/_inductor``, its docs ``installation.md`` and
``overview.md``): Inductor-Ascend, torch_npu's inductor backend, generates Triton kernels for the NPU
from torch_npu 2.7.1 on, when triton-ascend is installed (without it torch_npu warns "triton-ascend is
not installed" and registers no NPU code generation); torchair (``torchair.get_npu_backend()``) is the
separate graph-mode backend. The ``eager`` and ``aot_eager`` backends generate no code and run npu
graphs as CUDA ones. Under the shim, the default backend compiles npu graphs with ``aot_eager`` where
no NPU code generation is registered (the simulated NPU; torch_npu without triton-ascend) and says so
once (``cuda_shim/patches/compile.py``). Readers: check's ``torch-compile`` rule, the shim's docs.
"""
from __future__ import annotations

from ascend_compat.knowledge.records import AUTO, PARTIAL, Construct

#: torch.compile backends that generate no code: npu graphs run as CUDA ones
CODE_FREE_BACKENDS = frozenset({"eager", "aot_eager"})

_COUNT = ("import torch\nfrom ascend_compat.cuda_shim import registry\n"
          "before = registry.counters().get('torch.compile(inductor)->aot_eager', 0)\n"
          "m = torch.nn.Linear(4, 4).cuda()\n")
_FELL_BACK = ("print(y.device.type, 'aot_eager' if registry.counters().get('torch.compile(inductor)->aot_eager', 0) "
              "> before else 'as asked')")

RECORDS: tuple[Construct, ...] = (
    Construct("compile", "torch.compile(model)", "torch-compile", PARTIAL,
              "Inductor-Ascend (torch_npu 2.7.1 and later, with triton-ascend), or torchair",
              "the default backend, inductor, generates NPU kernels only through torch_npu's Inductor-Ascend "
              "(torch_npu 2.7.1 and later, with triton-ascend installed); elsewhere the shim compiles npu graphs "
              "with backend='aot_eager' (the same graphs, no fused kernels) and says so once",
              "install triton-ascend for Inductor-Ascend, or pass backend='aot_eager' (or torchair's NPU "
              "backend) to compile without generated kernels.",
              _COUNT + "y = torch.compile(m)(torch.randn(2, 4, device='cuda'))\n" + _FELL_BACK, "npu aot_eager",
              fixed=_COUNT + "y = torch.compile(m, backend='aot_eager')(torch.randn(2, 4, device='cuda'))\n"
              + _FELL_BACK, fixed_expect="npu as asked"),
    Construct("compile", 'torch.compile(model, backend="aot_eager")', None, AUTO, None,
              "eager and aot_eager generate no code, so they run npu graphs as they run CUDA ones",
              "keep it.",
              _COUNT.replace(".cuda()", ".to('npu')")
              + "y = torch.compile(m, backend='aot_eager')(torch.randn(2, 4, device='npu'))\n" + _FELL_BACK,
              "npu as asked",
              unreported="a backend that generates no code runs on npu tensors as on CUDA ones, so nothing needs "
                         "an edit"),
)

BY_NAME: dict[str, Construct] = {r.name: r for r in RECORDS}
