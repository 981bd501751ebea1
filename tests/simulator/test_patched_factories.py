"""The simulator's own host allocations never go through the public ``torch`` factories, which
libraries replace while they run (issue 23, item 12).

DeepSpeed's ``zero.Init`` wraps ``torch.empty``, ``zeros``, ``ones``, ``full``, ``arange``, ``eye``,
``randn`` and ``tensor`` with a function that adds the accelerator device when none is given; if the
simulator got host memory from ``torch.empty``, every allocation would allocate again (RecursionError).
"""
from __future__ import annotations

from tests.simulator._subproc import check, run_python

_WRAPPED = ("tensor", "empty", "zeros", "ones", "full", "arange", "eye", "randn", "empty_strided")


def test_factories_that_add_the_device_do_not_recurse():
    out = check(run_python(f"""
        import torch
        from ascend_compat import simulator
        simulator.install()
        originals = {{n: getattr(torch, n) for n in {_WRAPPED!r}}}

        def on_device(fn):  # zero_wrapper_for_fp_tensor_constructor, reduced to its device rule
            def wrapped(*args, **kwargs):
                if kwargs.get("device") is None:
                    kwargs["device"] = torch.device("npu", 0)
                return fn(*args, **kwargs)
            return wrapped

        for name, fn in originals.items():
            setattr(torch, name, on_device(fn))
        try:
            layer = torch.nn.Linear(4, 4)                   # torch.empty + init kernels
            x = torch.ones(3, 4)
            y = (layer(x) * 2 + 1).sum(0)                   # Python numbers in Tensor slots
            y.sum().backward()
            out = torch.empty(0, device="npu")
            torch.cat([x, x], out=out)                      # an out= that is retried into host buffers
            strided = torch.empty_strided((2, 3), (1, 2))
            devices = {{str(t.device) for t in (layer.weight, x, y, out, strided, layer.weight.grad)}}
        finally:
            for name, fn in originals.items():
                setattr(torch, name, fn)
        print("RESULT", sorted(devices), tuple(out.shape), torch.equal(out.cpu()[:3], x.cpu()))
    """))
    assert "RESULT ['npu:0'] (6, 4) True" in out, out
