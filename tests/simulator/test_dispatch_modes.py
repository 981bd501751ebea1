"""``TorchDispatchMode`` on the simulated NPU: C++ paths that run a device kernel while a mode is
on the stack (``torch.tensor(data, device=...)``, nested modes) must reach the simulator's kernels."""
from __future__ import annotations

import torch

from _recording_mode import RecordingMode


def test_torch_tensor_on_npu_under_a_dispatch_mode():
    with RecordingMode():
        t = torch.tensor([[1.0, 2.0], [3.0, 4.0]], device="npu")
        n = torch.as_tensor([5, 6], device="npu")
    assert t.device.type == "npu" and t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert n.tolist() == [5, 6]


def test_nested_modes_run_fallback_and_native_ops():
    x = torch.linspace(-1, 1, 9, device="npu")
    outer, inner = RecordingMode(), RecordingMode()
    with outer, inner:
        h = torch.histc(x, bins=4)
        nz = torch.nonzero(x > 0)
        s = (x * 2).sum()
        t = torch.tensor([1.0], device="npu")
    xc = x.cpu()
    assert h.cpu().tolist() == torch.histc(xc, bins=4).tolist()
    assert nz.cpu().tolist() == torch.nonzero(xc > 0).tolist()
    torch.testing.assert_close(s.cpu(), (xc * 2).sum())
    assert t.device.type == "npu"
    assert "aten.histc.default" in inner.ops and "aten.histc.default" in outer.ops


def test_training_step_under_a_mode():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)).npu()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    mode = RecordingMode()
    with mode:
        x = torch.tensor([[0.1, 0.2, 0.3, 0.4]] * 3, device="npu")
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
    assert any("addmm" in o or "mm" in o for o in mode.ops)
    assert all(p.grad is not None and p.grad.device.type == "npu" for p in model.parameters())


def test_per_op_registrations_only_from_the_first_mode_push():
    # until a dispatch mode is used, the dispatcher shows PrivateUse1 kernels only where torch_npu
    # registers them (fallback ops such as aten::mode have none); the first push adds them
    from _subproc import check, run_python

    out = check(run_python("""
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode
        import ascend_compat.simulator as sim
        sim.install()
        has = torch._C._dispatch_has_kernel_for_dispatch_key
        print(has("aten::mode", "PrivateUse1"))
        class M(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))
        with M():
            t = torch.tensor([3.0, 1.0, 3.0], device="npu")
        print(has("aten::mode", "PrivateUse1"), torch.mode(t).values.item())
    """))
    assert out.split() == ["False", "True", "3.0"]
