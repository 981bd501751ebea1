"""Crash canary (docs/simulator_pitfalls.md, pitfall 1): calls that could bypass the simulator's allocator run in a subprocess,
which must end normally (no signal death), each call either working or raising a clear error."""
from __future__ import annotations

from tests.simulator._subproc import run_python

CALLS = """
import io, sys, torch
from ascend_compat import simulator
simulator.install()
def attempt(name, fn):
    try:
        r = fn()
        print("OK", name, getattr(r, "device", ""))
    except Exception as e:
        print("ERR", name, type(e).__name__, str(e).splitlines()[0][:120])
    sys.stdout.flush()
attempt("UntypedStorage(n, device)", lambda: torch.UntypedStorage(128, device="npu"))
attempt("UntypedStorage(device)", lambda: torch.UntypedStorage(device="npu"))
attempt("TypedStorage(device)", lambda: torch.TypedStorage(4, dtype=torch.float32, device="npu"))
attempt("storage.npu()", lambda: torch.ones(3).untyped_storage().npu())
buf = io.BytesIO(); torch.save(torch.arange(5.0), buf)
def load(loc):
    buf.seek(0); return torch.load(buf, map_location=loc)
attempt("load map npu", lambda: load("npu"))
attempt("load map npu:0", lambda: load(torch.device("npu:0")))
attempt("load map lambda", lambda: load(lambda s, loc: s.npu()))
attempt("empty(pin_memory=True)", lambda: torch.empty(4, pin_memory=True))
attempt("zeros(pin_memory=True)", lambda: torch.zeros(4, pin_memory=True))
attempt("tensor.pin_memory()", lambda: torch.ones(4).pin_memory())
attempt("is_pinned", lambda: torch.ones(4).is_pinned())
attempt("untyped_storage().resize_", lambda: torch.ones(4, device="npu").untyped_storage().resize_(64))
attempt("from_dlpack(npu)", lambda: torch.from_dlpack(torch.ones(3, device="npu")))
attempt("npu tensor __dlpack__", lambda: torch.ones(3, device="npu").__dlpack__())
attempt("share_memory_", lambda: torch.ones(3, device="npu").share_memory_())
attempt("tensor(device=npu:7)", lambda: torch.ones(3, device="npu:7"))
attempt("set_device(5)", lambda: torch.npu.set_device(5))
attempt("Stream", lambda: torch.Stream(device="npu"))
attempt("Event", lambda: torch.Event(device="npu"))
attempt("sparse to npu", lambda: torch.eye(3).to_sparse().to("npu"))
attempt("quantized to npu", lambda: torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.qint8).to("npu"))
attempt("quantized factory", lambda: torch._empty_affine_quantized((3,), scale=0.1, zero_point=0, dtype=torch.qint8,
                                                                    device="npu"))
QCPU = torch._C.DispatchKeySet(torch._C.DispatchKey.QuantizedCPU)
attempt("C++ allocator", lambda: torch.ops.aten._empty_affine_quantized.default.redispatch(
    QCPU, [3], dtype=torch.qint8, device="npu"))
attempt("meta to npu", lambda: torch.empty(3, device="meta").to("npu"))
attempt("npu to meta", lambda: torch.ones(3, device="npu").to("meta"))
attempt("record_stream", lambda: torch.ones(3, device="npu").record_stream(torch.Stream(device="npu")))
attempt("nested", lambda: torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], device="npu"))
attempt("uint8 big", lambda: torch.empty(1 << 20, dtype=torch.uint8, device="npu"))
attempt("compile eager", lambda: torch.compile(lambda x: x.sin() + 1, backend="eager")(torch.ones(3, device="npu")))
print("CANARY-END")
"""


def test_allocator_bypassing_calls_do_not_crash_the_process():
    proc = run_python(CALLS, timeout=300)
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert proc.returncode == 0 and "CANARY-END" in proc.stdout, proc.stdout + proc.stderr
    lines = {line.split(" ", 2)[1] if " " in line else line: line for line in proc.stdout.splitlines()}
    out = proc.stdout
    # the patched paths must actually work, not merely fail cleanly
    for name in ("UntypedStorage(n, device)", "storage.npu()", "load map npu", "load map npu:0",
                 "tensor.pin_memory()", "Stream", "record_stream", "uint8 big"):
        assert f"OK {name}" in out, out
    assert "ERR tensor(device=npu:7) RuntimeError Invalid device ID" in out, lines
    from ascend_compat.simulator import _quantized_ops

    if _quantized_ops.unavailable_reason() is None:  # the C++ part (and its device allocator) is loaded
        assert "OK quantized factory npu:0" in out, out
        assert "ERR C++ allocator RuntimeError the simulated NPU allocates device memory in Python" in out, out
