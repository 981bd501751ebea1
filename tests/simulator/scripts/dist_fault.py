"""Collectives under an injected fault (``ASCEND_COMPAT_SIM_FAULTS``), launched by
tests/simulator/test_hccl_comm.py as ``torchrun --nproc-per-node=2 dist_fault.py OUT_DIR CALLS``:
each rank runs CALLS all-reduces on npu and writes ``OUT_DIR/rank<r>.json`` with the error it got
(if any), the seconds it waited in the failing call, and its results."""
import json
import os
import sys
import time

from _rank import start

rank, device = start()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

out_dir, calls = sys.argv[1], int(sys.argv[2])
report = {"rank": rank, "results": []}
for i in range(calls):
    t = torch.full((4,), float(rank + 1), device=device)
    t0 = time.time()
    try:
        dist.all_reduce(t)
    except RuntimeError as exc:
        report.update(error=str(exc), waited=time.time() - t0, call=i + 1)
        break
    report["results"].append(t.tolist())
with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as fh:
    json.dump(report, fh)
sys.exit(1 if "error" in report else 0)
