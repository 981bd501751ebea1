"""The C++ argument conversion (``_cext/sim_fast.cpp``, used by ``_dispatch._fast``/``_fast_lists``)
agrees with the Python path (``_dispatch._host_arg``), which stays the reference, and gives up on
exactly the cases that path treats specially."""
from __future__ import annotations

import pytest
import torch

from ascend_compat.simulator import _cext, _dispatch, _memory
from tests.simulator._subproc import check, run_python

pytestmark = pytest.mark.skipif(_dispatch._host_args is None,
                                reason=f"the simulator's C++ part is not loaded here: {_cext.hooks_unavailable_reason()}")

NONE = frozenset()


def _python(args, written=NONE):
    index, out = None, []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            a, index = _dispatch._host_arg(a, index, i in written)
        out.append(a)
    return out, index


def _same_alias(native, python):
    assert native.device.type == python.device.type == "cpu"
    assert (native.data_ptr(), native.shape, native.stride(), native.dtype) == \
        (python.data_ptr(), python.shape, python.stride(), python.dtype)


def test_whole_allocations_read_as_their_own_host_tensor_and_views_as_retags():
    a = torch.randn(4, 3, device="npu")
    b = torch.randn(3, device="npu")
    scalar = torch.tensor(2.0)
    args = (a, a.t(), a[1:], b, scalar, 3, None, [1, 2])
    native, index = _dispatch._host_args(args, NONE, NONE, _memory._hosts)
    python, python_index = _python(args)
    assert index == python_index == 0
    assert native[0] is python[0] is _memory._hosts[a.data_ptr()]()  # no retag for a whole allocation
    for n, p in zip(native[1:4], python[1:4]):
        _same_alias(n, p)
    assert native[4] is scalar and native[5:] == [3, None, [1, 2]]


def test_written_positions_get_a_fresh_alias():
    a = torch.randn(5, device="npu")
    native, _ = _dispatch._host_args((a, a), NONE, frozenset({0}), _memory._hosts)
    assert native[0] is not _memory._hosts[a.data_ptr()]() and native[1] is _memory._hosts[a.data_ptr()]()
    _same_alias(native[0], _python((a,), frozenset({0}))[0][0])


def test_lists_and_cpu_only_arguments():
    ts = [torch.randn(2, device="npu") for _ in range(3)]
    native, index = _dispatch._host_args(ts, NONE, NONE, _memory._hosts)
    assert index == 0 and all(n is _memory._hosts[t.data_ptr()]() for n, t in zip(native, ts))
    assert _dispatch._host_args((torch.tensor(1.0), 2), NONE, NONE, _memory._hosts)[1] is None


@pytest.mark.parametrize("case", ["cpu tensor with dims", "conjugate bit", "negative bit", "number at a tensor position"])
def test_gives_up_where_the_python_path_has_a_rule(case):
    a = torch.randn(3, device="npu")
    z = torch.randn(3, dtype=torch.complex64, device="npu")
    args, tpos = {
        "cpu tensor with dims": ((a, torch.randn(3)), NONE),
        "conjugate bit": ((z.conj(),), NONE),
        "negative bit": ((torch._neg_view(a),), NONE),
        "number at a tensor position": ((a, 2.0), frozenset({1})),
    }[case]
    assert _dispatch._host_args(args, tpos, NONE, _memory._hosts) is None


def test_ops_through_the_give_up_cases_still_compute_as_on_cpu():
    z = torch.randn(3, dtype=torch.complex64)
    a = torch.randn(3)
    zn, an = z.npu(), a.npu()
    assert torch.equal((zn.conj() * zn).cpu(), z.conj() * z)
    assert torch.equal(torch._neg_view(an).add(an).cpu(), torch._neg_view(a).add(a))
    assert torch.equal(torch.pow(an, 2.0).cpu(), torch.pow(a, 2.0))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        an + torch.randn(3)


def test_a_second_device_index_gives_up_and_raises_the_mixed_device_error():
    out = check(run_python("""
        import torch
        from ascend_compat import simulator
        from ascend_compat.simulator import _dispatch, _memory
        simulator.install(devices=2)
        a, b = torch.randn(2, device="npu:0"), torch.randn(2, device="npu:1")
        print(_dispatch._host_args((a, b), frozenset(), frozenset(), _memory._hosts))
        print(_dispatch._host_args((b,), frozenset(), frozenset(), _memory._hosts)[1])
        try:
            a + b
        except RuntimeError as exc:
            print(str(exc).splitlines()[0])
        try:
            torch._foreach_add([a], [b])
        except RuntimeError as exc:
            print(str(exc).splitlines()[0])
    """))
    lines = out.strip().splitlines()
    assert lines[:2] == ["None", "1"]
    assert all("Expected all tensors to be on the same device" in line for line in lines[2:4]), lines


def test_results_equal_without_the_cxx_part(tmp_path):
    code = """
        import torch
        from ascend_compat import simulator
        from ascend_compat.simulator import _dispatch
        simulator.install()
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).npu()
        opt = torch.optim.AdamW(model.parameters(), lr=0.1)
        x, y = torch.randn(5, 6, device="npu"), torch.randint(0, 3, (5,), device="npu")
        for _ in range(3):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        print(_dispatch._host_args is not None, repr(loss.item()), torch.npu.memory_allocated())
    """
    native = check(run_python(code)).strip().splitlines()[-1].split()
    python = check(run_python(code, env={"TORCH_EXTENSIONS_DIR": str(tmp_path), "CXX": "no-such-compiler"}))
    python = python.strip().splitlines()[-1].split()
    assert native[0] == "True" and python[0] == "False"
    assert native[1:] == python[1:]
