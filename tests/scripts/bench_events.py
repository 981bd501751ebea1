"""Benchmark loop timed with CUDA events (written for the test suite).

CUDA idioms: ``torch.cuda.Event(enable_timing=True)``, ``record()``, ``torch.cuda.synchronize()``,
``elapsed_time``, ``torch.cuda.reset_peak_memory_stats`` / ``max_memory_allocated``,
``torch.cuda.get_device_name``, ``torch.cuda.get_device_capability`` tuple unpacking,
``torch.cuda.nvtx.range_push/pop``, ``torch.backends.cuda.matmul.allow_tf32``.
"""
import torch

assert torch.cuda.is_available()
major, minor = torch.cuda.get_device_capability()
name = torch.cuda.get_device_name(0)
props = torch.cuda.get_device_properties(0)
torch.backends.cuda.matmul.allow_tf32 = major >= 8
a = torch.randn(64, 64, device="cuda")
b = torch.randn(64, 64, device="cuda")
for _ in range(3):  # warm-up
    a @ b
torch.cuda.synchronize()
torch.cuda.reset_peak_memory_stats()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
torch.cuda.nvtx.range_push("matmul loop")
start.record()
for _ in range(20):
    c = a @ b
end.record()
torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
ms = start.elapsed_time(end)
peak = torch.cuda.max_memory_allocated()
print(f"{name} sm_{major}{minor} SMs={props.multi_processor_count} mem={props.total_memory >> 20}MB")
print(f"RESULT device={c.device} elapsed_ms_positive={ms > 0} peak_bytes_positive={peak > 0}")
