"""npu backward: the calling thread by default, torch's device threads on request; exceptions
raised by backward hooks propagate (``simulator._autograd``)."""
from __future__ import annotations

import threading
import traceback

import pytest
import torch
from torch.utils.checkpoint import checkpoint

from ascend_compat.simulator import _config
from tests.simulator._subproc import check, run_python


def _hook_threads(loss_fn):
    """Threads on which a gradient hook of an npu leaf ran during ``loss_fn(w).backward()``."""
    seen = []
    w = torch.randn(3, device="npu", requires_grad=True)
    w.register_hook(lambda g: seen.append((threading.get_ident(), torch.autograd.is_multithreading_enabled())))
    loss_fn(w).backward()
    return seen, w


def test_default_runs_npu_backward_on_the_calling_thread():
    seen, w = _hook_threads(lambda w: (w * 2).sum())
    assert seen == [(threading.get_ident(), False)]  # device threads are off only while backward runs
    assert torch.autograd.is_multithreading_enabled()
    assert w.grad.device.type == "npu" and w.grad.tolist() == [2.0, 2.0, 2.0]


class _FailingBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("backward failed")


def test_the_switch_is_restored_when_backward_raises():
    w = torch.randn(3, device="npu", requires_grad=True)
    with pytest.raises(ValueError, match="backward failed"):
        _FailingBackward.apply(w).sum().backward()
    assert torch.autograd.is_multithreading_enabled()


def test_a_users_own_setting_is_kept():
    with torch.autograd.set_multithreading_enabled(False):
        seen, _ = _hook_threads(lambda w: (w * w).sum())
        assert not torch.autograd.is_multithreading_enabled()
    assert seen == [(threading.get_ident(), False)]
    assert torch.autograd.is_multithreading_enabled()


def test_grad_and_reentrant_checkpoint_agree_with_cpu():
    torch.manual_seed(0)
    x_cpu = torch.randn(4, 5, requires_grad=True)
    lin_cpu = torch.nn.Linear(5, 3)
    lin_npu = torch.nn.Linear(5, 3).npu()
    lin_npu.load_state_dict(lin_cpu.state_dict())
    x_npu = x_cpu.detach().npu().requires_grad_()

    def loss(lin, x, reentrant=True):
        return checkpoint(lambda t: torch.tanh(lin(t)), x, use_reentrant=reentrant).pow(2).sum()

    loss(lin_cpu, x_cpu).backward()
    loss(lin_npu, x_npu).backward()  # reentrant: backward inside backward
    torch.testing.assert_close(x_npu.grad.cpu(), x_cpu.grad)
    torch.testing.assert_close(lin_npu.weight.grad.cpu(), lin_cpu.weight.grad)
    (g_npu,) = torch.autograd.grad(loss(lin_npu, x_npu, reentrant=False), x_npu)
    (g_cpu,) = torch.autograd.grad(loss(lin_cpu, x_cpu, reentrant=False), x_cpu)
    torch.testing.assert_close(g_npu.cpu(), g_cpu)


def test_device_mode_keeps_torch_device_threads():
    out = check(run_python("""
        import threading, torch
        from ascend_compat import simulator
        simulator.install(autograd_threads="device")
        seen = []
        w = torch.randn(3, device="npu", requires_grad=True)
        w.register_hook(lambda g: seen.append(threading.get_ident()))
        (w * 2).sum().backward()
        print("hook on another thread:", seen[0] != threading.get_ident(), w.grad.tolist())
    """))
    assert "hook on another thread: True [2.0, 2.0, 2.0]" in out


def test_env_variable_selects_the_mode_and_rejects_unknown_values():
    out = check(run_python("""
        import threading, torch
        import ascend_compat
        from ascend_compat import simulator
        print(simulator.config().autograd_threads)
        seen = []
        w = torch.randn(3, device="npu", requires_grad=True)
        w.register_hook(lambda g: seen.append(threading.get_ident()))
        (w * 2).sum().backward()
        print("hook on another thread:", seen[0] != threading.get_ident())
    """, env={"ASCEND_COMPAT_SIMULATE": "1", "ASCEND_COMPAT_SIM_AUTOGRAD_THREADS": "device"}))
    assert out.splitlines()[0] == "device" and "hook on another thread: True" in out
    with pytest.raises(_config.SimConfigError, match="autograd_threads must be one of caller, device, got 'gpu'"):
        _config.make_config(autograd_threads="gpu")


def _raises_from_hook(exc_type, match, run):
    """Run ``run()``; assert it raised the hook's own exception, not an engine error chained to it."""
    with pytest.raises(exc_type, match=match) as info:
        run()
    text = "".join(traceback.format_exception(info.value))
    assert "in failing_hook" in text and "During handling" not in text, text
    return info.value


def failing_hook(*args):
    raise ValueError("hook saw a NaN")


def test_tensor_hook_exception_propagates_and_backward_keeps_working():
    w = torch.randn(3, device="npu", requires_grad=True)
    w.register_hook(failing_hook)
    _raises_from_hook(ValueError, "hook saw a NaN", lambda: (w * 2).sum().backward())
    y = torch.randn(3, device="npu", requires_grad=True)
    y.register_hook(lambda g: g * 10)  # hooks that return a gradient still replace it
    (y * 2).sum().backward()
    assert y.grad.tolist() == [20.0, 20.0, 20.0]


def test_hook_on_a_non_leaf_and_post_accumulate_hook_exceptions_propagate():
    w = torch.randn(3, device="npu", requires_grad=True)
    h = w * 2
    h.register_hook(failing_hook)
    _raises_from_hook(ValueError, "NaN", lambda: h.sum().backward())
    p = torch.randn(3, device="npu", requires_grad=True)
    p.register_post_accumulate_grad_hook(failing_hook)
    _raises_from_hook(ValueError, "NaN", lambda: (p * 2).sum().backward())


def test_module_backward_hook_and_pre_hook_exceptions_propagate():
    lin = torch.nn.Linear(3, 2).npu()
    handle = lin.register_full_backward_hook(failing_hook)
    x = torch.randn(4, 3, device="npu", requires_grad=True)
    _raises_from_hook(ValueError, "NaN", lambda: lin(x).sum().backward())
    handle.remove()
    lin.register_full_backward_pre_hook(failing_hook)
    _raises_from_hook(ValueError, "NaN", lambda: lin(x).sum().backward())


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
def test_deprecated_module_backward_hook_exception_propagates():
    lin = torch.nn.Linear(3, 2).npu()
    lin.register_backward_hook(failing_hook)
    x = torch.randn(4, 3, device="npu", requires_grad=True)
    _raises_from_hook(ValueError, "NaN", lambda: lin(x).sum().backward())
    # the same wrapper class carries state-dict hooks, called outside backward: untouched
    lin2 = torch.nn.Linear(3, 2).npu()
    lin2._register_state_dict_hook(lambda module, state, prefix, local: (_ for _ in ()).throw(KeyError("sd")))
    with pytest.raises(KeyError, match="sd"):
        lin2.state_dict()


def test_custom_function_node_hook_exception_propagates():
    w = torch.randn(3, device="npu", requires_grad=True)
    out = _Identity.apply(w)
    out.grad_fn.register_hook(failing_hook)
    _raises_from_hook(ValueError, "NaN", lambda: out.sum().backward())
    out = _Identity.apply(w)
    out.grad_fn.register_prehook(lambda grads: (grads[0] * 3,))
    out.sum().backward()
    assert w.grad.tolist() == [3.0, 3.0, 3.0]


class _Identity(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad


def test_hook_exception_propagates_from_device_threads():
    out = check(run_python("""
        import torch
        from ascend_compat import simulator
        simulator.install(autograd_threads="device")
        w = torch.randn(3, device="npu", requires_grad=True)
        def hook(g):
            raise KeyError("from the device thread")
        w.register_hook(hook)
        try:
            (w * 2).sum().backward()
        except KeyError as exc:
            print("caught", exc)
    """))
    assert "caught 'from the device thread'" in out


def test_one_device_uses_the_cxx_guard_when_its_library_loads():
    from ascend_compat.simulator import _cext, _guard

    if _cext.hooks_unavailable_reason() is not None:
        pytest.skip(f"the simulator's C++ part is not loaded here: {_cext.hooks_unavailable_reason()}")
    assert _guard.cxx_guard_active() and _guard.device_count() == 1


def test_without_the_cxx_guard_hook_exceptions_still_propagate(tmp_path):
    # no compiler and an empty extension cache: torch's Python guard, so the hook wrappers apply
    out = check(run_python("""
        import torch
        from ascend_compat import simulator
        from ascend_compat.simulator import _guard
        simulator.install()
        print("python guard", not _guard.cxx_guard_active())
        def failing(*args):
            raise ValueError("hook saw a NaN")
        w = torch.randn(3, device="npu", requires_grad=True)
        w.register_hook(failing)
        lin = torch.nn.Linear(3, 2).npu()
        lin.register_full_backward_hook(failing)
        for name, run in (("tensor", lambda: (w * 2).sum().backward()),
                          ("module", lambda: lin(torch.randn(4, 3, device="npu", requires_grad=True)).sum().backward())):
            try:
                run()
            except ValueError as exc:
                print(name, "caught", exc)
        y = torch.randn(3, device="npu", requires_grad=True)
        (y * 2).sum().backward()
        print("after", y.grad.tolist())
    """, env={"TORCH_EXTENSIONS_DIR": str(tmp_path), "CXX": "no-such-compiler"}))
    assert out.splitlines()[-4:] == ["python guard True", "tensor caught hook saw a NaN",
                                     "module caught hook saw a NaN", "after [2.0, 2.0, 2.0]"], out
