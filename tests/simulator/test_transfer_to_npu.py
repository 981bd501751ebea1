"""A script written for Ascend, starting with ``from torch_npu.contrib import transfer_to_npu``,
dry-runs unchanged on the simulated NPU."""
from __future__ import annotations

import subprocess
import sys

from subproc import check, clean_env, run_python

SCRIPT = '''import torch
import torch_npu
from torch_npu.contrib import transfer_to_npu

model = torch.nn.Linear(8, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 8).cuda()
y = x[:, :2].sum(1, keepdim=True).repeat(1, 2)
first = None
for _ in range(20):
    loss = torch.nn.functional.mse_loss(model(x), y)
    first = first if first is not None else loss.item()
    opt.zero_grad(); loss.backward(); opt.step()
print("TRAINED", next(model.parameters()).device, torch.cuda.is_available(), loss.item() < first)
'''


def test_ported_script_runs_under_run_simulate(tmp_path):
    script = tmp_path / "ported.py"
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "run", "--simulate", str(script)],
                          capture_output=True, text=True, timeout=300, env=clean_env())
    assert "TRAINED npu:0 True True" in check(proc)


def test_the_import_activates_the_shim():
    out = check(run_python("""
        import ascend_compat.simulator as sim
        sim.install()
        from ascend_compat import cuda_shim
        before = cuda_shim.is_active()
        from torch_npu.contrib import transfer_to_npu
        import torch
        print("ACTIVE", before, cuda_shim.is_active(), torch.ones(1).cuda().device)
    """))
    assert "ACTIVE False True npu:0" in out
