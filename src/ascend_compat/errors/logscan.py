"""Scan a log or traceback for every Ascend error code and known failure pattern, and explain each.

``scan_text(text)`` returns :class:`Finding` objects in order of first appearance: numeric codes
("error code is 507035", HCCL results on "HCCL function error" lines), CANN E-codes (EZ9999...),
torch_npu ERRxxyyy codes, and patterns such as fork-after-init, CPU-fallback warnings (with the op
names and how often each appeared), NPU out of memory, device mismatch, visible-device errors, HCCL
timeouts and CUDA/NCCL leftovers. ``read_log(path)`` reads a file or ``-`` (stdin) and raises
``LogReadError`` with a clear message for unreadable or binary input.
"""
from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ascend_compat.errors.explain import explain
from ascend_compat.errors.explanations import BLOCKING, HCCL_TIMEOUTS, NPU_SMI, PLOG, SET_ENV


class LogReadError(Exception):
    """The log could not be read as text (missing, unreadable, binary)."""


@dataclass
class Finding:
    """One code or pattern found in a log."""

    kind: str  # "code" | "pattern"
    key: str  # the code ("507035", "EZ9999", "hccl:9") or the pattern id ("cpu_fallback")
    title: str
    meaning: str
    count: int
    first_line: int  # 1-based
    excerpt: str
    causes: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    helps: list[str] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return asdict(self)

    def to_text(self) -> str:
        head = f"{self.key}  {self.title}  (line {self.first_line}" + \
               (f", {self.count} times)" if self.count > 1 else ")")
        lines = [head, f"  log:      {self.excerpt}", f"  meaning:  {self.meaning}"]
        ops = self.details.get("ops")
        if ops:
            lines.append("  ops:      " + ", ".join(f"{op} ({n}x)" for op, n in ops.items()))
        for label, items in (("causes", self.causes), ("fix", self.fixes), ("helps", self.helps)):
            for i, item in enumerate(items):
                lines.append(f"  {label + ':' if i == 0 else '':<9} - {item}")
        return "\n".join(lines)


@dataclass(frozen=True)
class _Pattern:
    key: str
    regex: re.Pattern
    title: str
    meaning: str
    causes: tuple[str, ...]
    fixes: tuple[str, ...]
    helps: tuple[str, ...] = ()


def _p(key, regex, title, meaning, causes, fixes, helps=()):
    return _Pattern(key, re.compile(regex, re.I), title, meaning, tuple(causes), tuple(fixes), tuple(helps))


PATTERNS = [
    _p("fork_after_init", r"Cannot re-initialize NPU in forked subprocess",
       "NPU used in a forked child", "the parent process initialised the NPU and then forked; a forked "
       "child cannot use it",
       ["multiprocessing / DataLoader workers / vLLM workers started with the default 'fork' method after the "
        "parent touched the NPU"],
       ["use the 'spawn' start method: multiprocessing.set_start_method('spawn') or "
        "DataLoader(..., multiprocessing_context='spawn'); for vLLM: VLLM_WORKER_MULTIPROC_METHOD=spawn",
        "do not touch torch.npu in the parent before starting workers"]),
    _p("cpu_fallback", r"The operator '([\w:.]+)' is not currently supported on the NPU backend and will fall "
                       r"back to run on the CPU",
       "CPU fallback", "these ops have no NPU kernel in this torch_npu version and ran on the CPU (a host round "
       "trip per call; slow in a loop)",
       ["the op is not implemented by torch_npu for this version/dtype"],
       ["replace the op with an equivalent that runs on the NPU, or upgrade torch_npu",
        "measure the impact with ascend_compat.doctor.FallbackMonitor",
        "TORCH_NPU_FALLBACK_CPU_DISABLE=1 turns silent fallbacks into errors (to find them all)"]),
    _p("cpu_fallback_disabled", r"The operator '([\w:.]+)' would execute its main computation on CPU",
       "CPU fallback disabled", "the op has no NPU kernel and CPU fallback is disabled by "
       "TORCH_NPU_FALLBACK_CPU_DISABLE=1",
       ["TORCH_NPU_FALLBACK_CPU_DISABLE=1 is set"],
       ["replace the op, or unset TORCH_NPU_FALLBACK_CPU_DISABLE to let it run on the CPU"]),
    _p("npu_oom", r"NPU out of memory", "NPU out of memory",
       "device memory is exhausted (torch.OutOfMemoryError)",
       ["model/batch/activations too large", "fragmentation", "another process on the same card"],
       ["reduce batch size or sequence length; activation checkpointing; mixed precision",
        "PYTORCH_NPU_ALLOC_CONF=expandable_segments:True against fragmentation",
        "torch.npu.memory_summary() to see what holds memory"], (NPU_SMI,)),
    _p("device_mismatch", r"Expected all tensors to be on the same device", "device mismatch",
       "an op received tensors on different devices (CPU and NPU, or two NPUs)",
       ["a tensor created without device= (defaults to CPU)", "a buffer not moved with the module",
        "code that still moves data to 'cuda' while the model is on npu"],
       ["move every input to the same npu device (tensor.to('npu:<i>')); create tensors with device=",
        "run ascend-compat check to find hard-coded CUDA/CPU device strings"]),
    _p("visible_devices", r"ASCEND_RT_VISIBLE_DEVICES|invalid device (?:id|ordinal)|Invalid device",
       "visible-device / device id error",
       "a device index is out of range of the visible NPUs, or the visible-device list is invalid",
       ["ASCEND_RT_VISIBLE_DEVICES names a device that does not exist, or is not ascending (then "
        "torch.npu.is_available() is False)", "LOCAL_RANK larger than the number of visible devices",
        "CUDA_VISIBLE_DEVICES set instead (it is ignored on Ascend)"],
       ["set ASCEND_RT_VISIBLE_DEVICES to ascending ids that npu-smi info shows, e.g. 0,1,2,3"],
       (NPU_SMI, "ascend-compat doctor")),
    _p("hccl_timeout", r"HCCL_EXEC_TIMEOUT|notify ?wait|hccl.*time ?out|time ?out.*hccl", "HCCL timeout",
       "a collective waited for a peer rank that did not arrive in time",
       ["another rank crashed or hung earlier (look at its log first)",
        "ranks issued different collectives or in a different order", "very slow work on one rank"],
       ["find the first error across all ranks' logs",
        "raise HCCL_EXEC_TIMEOUT only when one step is legitimately slow"], (HCCL_TIMEOUTS, PLOG)),
    _p("cuda_not_compiled", r"Torch not compiled with CUDA enabled", "CUDA call on an Ascend machine",
       "code called a CUDA API (or used device 'cuda' / an integer device) and torch has no CUDA",
       ["hard-coded .cuda() / 'cuda' / torch.cuda.* in the code or a library",
        "an integer device id passed to .to() on torch <= 2.4 (meant CUDA)"],
       ["run the program with ascend-compat run (translates CUDA calls to npu)",
        "or fix the call sites: ascend-compat check / ascend-compat migrate"]),
    _p("nccl_missing", r"Distributed package doesn't have NCCL built in", "NCCL backend requested",
       "init_process_group(backend='nccl') on a machine without NCCL",
       ["the code or the framework (Trainer, DeepSpeed, Lightning) picks 'nccl'"],
       ["use backend='hccl' (or run under ascend-compat run, which maps nccl to hccl)"]),
    _p("backend_autoload", r"Failed to load the backend extension", "torch backend autoload failed",
       "importing torch tried to load torch_npu automatically and it failed",
       ["torch_npu built for another torch version (ABI mismatch)", "CANN environment not set (libascendcl.so)",
        "a CUDA build of torch together with torch_npu"],
       ["install the torch_npu matching your torch (same major.minor.patch)", SET_ENV,
        "TORCH_DEVICE_BACKEND_AUTOLOAD=0 to import torch without torch_npu while you fix it"],
       ("ascend-compat doctor",)),
    _p("two_accelerators", r"Two accelerators cannot be used at the same time", "CUDA torch with torch_npu",
       "torch is a CUDA build and torch_npu refuses to load next to another accelerator",
       ["pip installed the default (CUDA) torch wheel"],
       ["install the CPU build: pip install torch==<ver> --index-url https://download.pytorch.org/whl/cpu"]),
    _p("async_trace", r"Since the operator is called asynchronously", "asynchronous error report",
       "the traceback may point at a later op than the one that failed",
       ["NPU ops run asynchronously; errors surface at the next synchronisation"],
       ["rerun with ASCEND_LAUNCH_BLOCKING=1 to get the failing op's traceback"], (BLOCKING,)),
    _p("kernel_missing", r"Cannot find bin of op|kernel .*not found|op_api.*not found", "operator kernel missing",
       "the CANN ops/kernels package has no binary for this op",
       ["the ops (kernels) package is not installed or is another CANN version"],
       ["install the CANN ops package matching the toolkit", SET_ENV], ("ascend-compat doctor",)),
    _p("hardware_fault", r"UCE ERROR|HBM MULTI BIT ECC ERROR|SUSPECT (?:MEM|REMOTE) ERROR|HCCS LINK ERROR|"
                         r"UB LINK ERROR|FORCE STOP",
       "device fault / forced stop", "torch_npu reported a hardware fault or a forced stop of the device",
       ["HBM memory error, interconnect link error, or a stop requested by the fault-tolerance layer"],
       ["restart from the last checkpoint; if the same card repeats, have it checked"], (NPU_SMI,)),
]

#: "error code is 507035", "error code:507035", "error_code=507048", "runtime result = 507035" (not hex)
_NUM = re.compile(r"(?:error[ _]?code|runtime result)\s*(?:is|:|=)\s*(\d{1,7})(?![\dxX.])", re.I)
_HCCL_LINE = re.compile(r"HCCL function error|Hccl\w+\(", re.I)
_ECODE = re.compile(r"(?<![A-Za-z0-9_])(E[0-9A-Z]\d{4})(?![A-Za-z0-9_])")
_ERR = re.compile(r"(?<![A-Za-z0-9_])(ERR\d{5})(?![A-Za-z0-9_])")


def _excerpt(line: str, limit: int = 160) -> str:
    line = line.strip()
    return line if len(line) <= limit else line[: limit - 3] + "..."


def scan_text(text: str) -> list[Finding]:
    """Every code and known pattern in ``text``, one Finding each, in order of first appearance."""
    found: dict[str, Finding] = {}
    fallback_ops: dict[str, Counter] = {"cpu_fallback": Counter(), "cpu_fallback_disabled": Counter()}

    def add_code(code: str, lineno: int, line: str) -> None:
        if code in found:
            found[code].count += 1
            return
        ex = explain(code)
        found[code] = Finding("code", code, ex.title, ex.meaning, 1, lineno, _excerpt(line),
                              list(ex.causes), list(ex.fixes), list(ex.helps))

    for lineno, line in enumerate(text.splitlines(), 1):
        for m in _NUM.finditer(line):
            n = int(m.group(1))
            if n == 0:
                continue
            add_code(f"hccl:{n}" if n < 100 and _HCCL_LINE.search(line) else str(n), lineno, line)
        for m in _ECODE.finditer(line):
            add_code(m.group(1), lineno, line)
        for m in _ERR.finditer(line):
            add_code(m.group(1), lineno, line)
        for p in PATTERNS:
            m = p.regex.search(line)
            if not m:
                continue
            if p.key in fallback_ops:
                fallback_ops[p.key][m.group(1)] += 1
            if p.key in found:
                found[p.key].count += 1
            else:
                found[p.key] = Finding("pattern", p.key, p.title, p.meaning, 1, lineno, _excerpt(line),
                                       list(p.causes), list(p.fixes), list(p.helps))
    for key, ops in fallback_ops.items():
        if ops:
            found[key].details["ops"] = dict(ops.most_common())
            found[key].title = f"{found[key].title}: {len(ops)} op(s)"
    return list(found.values())


def read_log(path: str) -> str:
    """The text of ``path`` (``-`` = stdin); raises LogReadError if missing, unreadable or binary."""
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except FileNotFoundError:
        raise LogReadError(f"{path}: no such file; pass a log file, or '-' to read standard input") from None
    except IsADirectoryError:
        raise LogReadError(f"{path} is a directory; pass one log file (e.g. a plog-pid_*.log inside it)") from None
    except OSError as exc:
        raise LogReadError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    head = data[:8192]
    if b"\x00" in head:
        raise LogReadError(f"{path or 'stdin'}: looks binary (contains NUL bytes), not a text log; "
                           "if it is compressed, decompress it first (e.g. zcat FILE | ascend-compat error --log -)")
    text = data.decode("utf-8", errors="replace")
    sample = text[:8192]
    if sample and sample.count("\ufffd") > len(sample) // 10:
        raise LogReadError(f"{path}: not UTF-8 text (too many undecodable bytes); convert it to UTF-8 first")
    return text
