"""``torch.compile`` on the simulated NPU without the shim (issue 23, item 13): dynamo never traces the
simulator's own Python (its kernels run as torch's C++ kernels do for it), so factories on the device,
dynamic shapes and a compiled training step work with the eager and aot_eager backends."""
from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_simulator_files_are_skipped_by_dynamo():
    from torch._dynamo import trace_rules

    from ascend_compat.simulator import _dispatch, _special_ops
    from ascend_compat.simulator.torch_npu.fused import attention

    for module in (_dispatch, _special_ops, attention):
        assert trace_rules.check_file(module.__file__).skipped, module.__name__


@pytest.mark.parametrize("dynamic", [False, True])
def test_factories_on_the_device_inside_a_compiled_function(dynamic):
    x = torch.ones(8, device="npu")

    def fn(i):
        pos = torch.arange(0, i.size(0), dtype=torch.long, device=i.device)
        mask = torch.tril(torch.ones(i.size(0), i.size(0), device=i.device, dtype=torch.bool))
        return i + pos + mask.sum(1) + torch.tensor([1.0], device=i.device) + torch.full_like(i, 2.0)

    out = torch.compile(fn, backend="aot_eager", dynamic=dynamic, fullgraph=True)(x)
    assert out.device == torch.device("npu:0") and torch.equal(out.cpu(), fn(x).cpu())


def test_compiled_training_step_matches_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).to("npu")
    ref = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).to("npu")
    ref.load_state_dict(model.state_dict())
    x = torch.randn(5, 8, device="npu")

    def step(m, opt):
        loss = (m(x) + torch.arange(4, device=x.device)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    compiled = torch.compile(model, backend="aot_eager")
    opt_c, opt_r = torch.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(ref.parameters(), lr=0.1)
    for _ in range(3):
        assert step(compiled, opt_c) == pytest.approx(step(ref, opt_r), rel=1e-6)


def test_eager_code_after_a_graph_break_does_not_compile_the_simulators_kernels():
    """After a graph break the rest runs eagerly under dynamo's frame hook; the npu ops there call the
    simulator's Python kernels, which dynamo compiled as user code (13 frames here instead of 2)."""
    from torch._dynamo.utils import counters

    counters.clear()
    x = torch.ones(8, device="npu")

    def fn(i):
        y = i * 2
        torch._dynamo.graph_break()
        return (torch.arange(0, i.size(0), device=i.device) + y).sum()

    out = torch.compile(fn, backend="aot_eager", dynamic=True)(x)
    assert out.item() == 44.0
    assert counters["frames"]["total"] == 2 and counters["stats"]["unique_graphs"] == 2
