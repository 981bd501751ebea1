"""OpObserver, the hook under audit, profile and compare: what reaches ``on_op``, how composites are
decomposed, which thread is watched, and where ops are attributed (module path, source line, forward
line of a backward op). The simulator is process-global, so on-device cases run in a subprocess."""
from __future__ import annotations

import torch

from ascend_compat.observe import routing
from ascend_compat.observe.observer import OpCall, OpObserver


class Names(OpObserver):
    """Keeps the name and route of every op it is handed."""

    def __init__(self, **options):
        super().__init__(**options)
        self.seen, self.composites = [], []

    def on_composite(self, call: OpCall) -> None:
        self.composites.append(call.name)

    def on_op(self, call: OpCall):
        self.seen.append((call.name, call.kind))
        return call.run()


def test_cpu_ops_pass_through_unrouted_and_unchanged():
    x = torch.randn(4, 4)
    with Names(router=routing.backend_router()) as obs:
        y = (x @ x).relu()
    assert torch.equal(y, (x @ x).relu())
    # nothing touches the NPU: no op is routed
    assert ("aten::mm", routing.OTHER) in obs.seen and all(kind == routing.OTHER for _, kind in obs.seen)
    assert not obs.observing


def test_route_everything_judges_cpu_ops_and_runs_composites_as_their_pieces():
    from ascend_compat import data

    router = routing.Router(routing.table_predicate(data.native_ops()))
    x = torch.randn(3, 2)
    with Names(router=router, route_everything=True) as obs:
        y = torch.t(x)
    assert torch.equal(y, x.transpose(0, 1))
    # aten::t has no torch_npu kernel of its own: its CompositeExplicitAutograd kernel runs, whose pieces
    # come back to the observer (down to ops with a kernel)
    assert obs.composites[0] == "aten::t" and "aten::t" not in {name for name, _ in obs.seen}
    assert obs.seen and all(kind == routing.NATIVE for _, kind in obs.seen)


def test_watching_gates_every_op():
    class Gated(Names):
        on = False

        def watching(self) -> bool:
            return self.on

    with Gated() as obs:
        torch.ones(2) + 1
        obs.on = True
        torch.ones(2) * 2
    assert [name for name, _ in obs.seen] == ["aten::ones", "aten::mul.Tensor"]


def test_own_thread_leaves_other_threads_out():
    import threading

    with Names(own_thread=True) as obs:
        worker = threading.Thread(target=lambda: torch.ones(2).sum())
        worker.start()
        worker.join()
        torch.zeros(2).sum()
    assert [name for name, _ in obs.seen] == ["aten::zeros", "aten::sum"]


class Sites(OpObserver):
    def __init__(self, **options):
        super().__init__(modules=True, **options)
        self.where = {}

    def on_op(self, call: OpCall):
        self.where.setdefault(call.name, self.origin(call))
        return call.run()


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.tanh(self.inner(x))  # LINE-tanh


def _line(marker: str) -> int:
    with open(__file__, encoding="utf-8") as fh:
        return next(i for i, line in enumerate(fh, 1) if line.rstrip().endswith("# " + marker))


def test_origin_gives_module_path_and_line_and_forward_sites_move_backward_ops_to_their_forward_line():
    model = torch.nn.Sequential(Block())
    x = torch.randn(2, 4)
    for forward_sites, backward_line in ((False, _line("LINE-backward")), (True, _line("LINE-tanh"))):
        with Sites(forward_sites=forward_sites) as obs:
            out = model(x)
            out.sum().backward()  # LINE-backward
        module, site = obs.where["aten::tanh"]
        assert module == "Sequential.0" and site[0] == __file__ and site[1] == _line("LINE-tanh")
        assert obs.where["aten::addmm"][0] == "Sequential.0.inner"
        back_module, back_site = obs.where["aten::tanh_backward"]
        assert back_site[1] == backward_line
        assert back_module == ("Sequential.0" if forward_sites else "")


class Passes(OpObserver):
    """Keeps, per op name, the module path (``module_path()``) and whether the backward was running."""

    def __init__(self, **options):
        super().__init__(modules=True, **options)
        self.where = {}

    def on_op(self, call: OpCall):
        from ascend_compat.observe.observer import in_backward

        self.where.setdefault((call.name, in_backward()), self.module_path())
        return call.run()


def test_backward_ops_of_nodes_made_inside_a_call_take_that_calls_module():
    """Was: only the autograd node a call returns was tagged, so the ``mm`` of a bias-free ``Linear`` (its
    output node is a view; ``MmBackward`` is made inside the kernel) and the backward of autocast's casts
    were placed outside any module."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 8, bias=False), torch.nn.ReLU(), torch.nn.Linear(8, 2, bias=False))
    x = torch.randn(3, 5, 4)
    with Passes(forward_sites=True) as obs:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(x)
        out.float().sum().backward()
    backward = {name: module for (name, back), module in obs.where.items() if back}
    assert backward["aten::mm"] in ("Sequential.0", "Sequential.2")
    assert all(module.startswith("Sequential.") for name, module in backward.items()
               if name in ("aten::mm", "aten::threshold_backward", "aten::t")), backward
    # forward ops are where they run; nothing is "in backward" before backward()
    assert obs.where[("aten::relu", False)] == "Sequential.1" and ("aten::relu", True) not in obs.where


def test_in_backward_and_module_path_without_forward_sites():
    from ascend_compat.observe.observer import in_backward

    assert not in_backward()
    model = torch.nn.Linear(4, 2)
    with Passes() as obs:
        model(torch.randn(3, 4)).sum().backward()
    assert obs.where[("aten::addmm", False)] == "Linear"
    assert obs.where[("aten::mm", True)] == ""  # without forward sites: where the backward runs


def test_script_frames_name_the_scripts_own_line_not_a_librarys(tmp_path):
    """``ScriptFrames`` (plan's site): a frame under the script's directory counts even inside a
    site-packages tree, other site-packages frames are skipped, and with no script frame on the stack the
    innermost frame outside ascend_compat stands in."""
    import sys

    from ascend_compat.observe.frames import ScriptFrames

    lib = tmp_path / "site-packages" / "lib_mod.py"
    lib.parent.mkdir()
    lib.write_text("import sys\ndef call(f):\n    return f(sys._getframe(0))\n")  # f gets the library's frame
    script = tmp_path / "site-packages" / "proj" / "train.py"
    script.parent.mkdir()
    script.write_text("import lib_mod\ndef run(f):\n    return lib_mod.call(f)\n")
    sys.path.insert(0, str(lib.parent))
    try:
        import lib_mod

        namespace = {}
        exec(compile(script.read_text(), str(script), "exec"), namespace)
        inside = ScriptFrames([str(script.parent)])
        assert namespace["run"](inside.site) == f"{script}:3"
        # the script's directory not given: its frame is library code too, and the test's frame wins
        assert namespace["run"](ScriptFrames([]).site).startswith(__file__ + ":")
        # only library (and standard-library) frames, in a thread: the innermost one stands in
        import threading

        found = []
        worker = threading.Thread(target=lib_mod.call, args=(lambda frame: found.append(ScriptFrames([]).site(frame)),))
        worker.start()
        worker.join()
        assert found == [f"{lib}:3"]
    finally:
        sys.path.remove(str(lib.parent))
        sys.modules.pop("lib_mod", None)


def test_on_the_simulated_npu_fallbacks_are_routed_and_device_factories_count():
    from subproc import check, run_python

    code = """
        import torch
        from ascend_compat import simulator
        simulator.install()
        from ascend_compat.observe import routing
        from ascend_compat.observe.observer import OpObserver

        class Kinds(OpObserver):
            def __init__(self):
                super().__init__(router=routing.backend_router())
                self.kinds = {}
            def on_op(self, call):
                self.kinds[call.name] = (call.kind, call.on_device, call.tensor_on_device)
                return call.run()

        x = torch.tensor([1.0, 2.0, 2.0], device="npu")
        with Kinds() as obs:
            torch.mode(x)
            torch.zeros(3)
            torch.empty(3, device="npu")
        for name in ("aten::mode", "aten::empty.memory_format"):
            print(name, *obs.kinds[name])
    """
    assert check(run_python(code)).splitlines() == ["aten::mode cpu_fallback True True",
                                                    "aten::empty.memory_format native True False"]


def test_an_observer_cannot_be_entered_twice():
    import pytest

    obs = Names()
    with obs:
        with pytest.raises(RuntimeError, match="already observing"):
            obs.start_observing()


def test_shared_parameters_stay_shared_when_moved_under_an_observer():
    """Was: ``profile --simulate`` untied ``emb.weight = head.weight`` (2 parameters instead of 1): the
    observer ran ``_has_compatible_shallow_copy_type`` as its composite, which says False for a host/NPU
    pair where the backend's kernel says True, so ``Module.to`` made a new Parameter for the second use."""
    from subproc import check, run_python

    code = """
        import torch
        from ascend_compat import simulator
        simulator.install()
        from ascend_compat.observe import routing
        from ascend_compat.observe.observer import OpObserver

        class Tied(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = torch.nn.Embedding(10, 4)
                self.head = torch.nn.Linear(4, 10, bias=False)
                self.emb.weight = self.head.weight

        with OpObserver(router=routing.backend_router()):
            model = Tied().to("npu")
        print(len(list(model.parameters())), model.emb.weight is model.head.weight)
    """
    assert check(run_python(code)).split() == ["1", "True"]
