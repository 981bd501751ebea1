"""``torch_npu._C._distributed_c10d`` of the stand-in: the simulated ``ProcessGroupHCCL`` class.

Code written for torch_npu (and torch_npu's own transfer_to_npu) reaches the HCCL group class
here, e.g. ``ProcessGroupHCCL.Options()`` or ``isinstance(pg, ProcessGroupHCCL)``.
"""
from __future__ import annotations

from ascend_compat.simulator._distributed import ProcessGroupHCCL

__all__ = ["ProcessGroupHCCL"]
