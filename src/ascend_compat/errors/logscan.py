"""Scan a log or traceback for every Ascend error code and known failure pattern, and explain each.

``scan_text(text)`` returns :class:`Finding` objects in order of first appearance: numeric codes
("error code is 507035", HCCL results on "HCCL function error" lines), CANN E-codes (EZ9999...),
torch_npu ERRxxyyy codes, and patterns such as fork-after-init, CPU-fallback warnings (with the op
names and how often each appeared), NPU out of memory, device mismatch, visible-device errors, HCCL
timeouts and CUDA/NCCL leftovers. ``scan_log(path)`` streams a file or ``-`` (stdin) in blocks
(bounded memory), dropping NUL padding and decoding UTF-16; ``LogReadError`` carries a clear message
for missing, unreadable, compressed or binary input.
"""
from __future__ import annotations

import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field

from ascend_compat.errors.explain import explain
from ascend_compat.errors.explanations import BLOCKING, HCCL_TIMEOUTS, NPU_SMI, PLOG, SET_ENV
from ascend_compat.knowledge import backends

_NCCL = backends.BY_NAME['"nccl"']


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


def _per_line(rx: re.Pattern) -> re.Pattern:
    """``rx`` followed by the rest of its line: at most one match per line, the line's first."""
    return re.compile(f"(?:{rx.pattern})[^\\n]*", rx.flags)


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
       [_NCCL.advice[:-1] + f" (or run under ascend-compat run: {_NCCL.reason})"]),
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
_NUM = re.compile(r"(?:error[ _]?code|runtime result)[ \t]*(?:is|:|=)[ \t]*(\d{1,7})(?![\dxX.])", re.I)
_HCCL_LINE = re.compile(r"HCCL function error|Hccl\w+\(", re.I)
#: E-codes and ERR codes; the "not preceded by a word character" check is done per match (a regex
#: look-behind would make the whole-log scan 15 times slower)
_ECODE = re.compile(r"(E[0-9A-Z]\d{4})(?![A-Za-z0-9_])")
_ERR = re.compile(r"(ERR\d{5})(?![A-Za-z0-9_])")
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")

#: pattern key -> its regex matching at most once per line (a pattern counts once per line)
_LINE_RX = {p.key: _per_line(p.regex) for p in PATTERNS}


def _lower_twin(rx: re.Pattern) -> re.Pattern:
    """A case-sensitive regex that matches the lower-cased text where ``rx`` (IGNORECASE) matches the
    text, at the same positions: several times faster. Patterns using an upper-case escape
    (\\D, \\W, \\S, \\B ...) cannot be lower-cased and are refused."""
    if re.search(r"\\[A-Z]", rx.pattern):
        raise ValueError(f"pattern {rx.pattern!r} has an upper-case escape; it cannot be lower-cased")
    return re.compile(rx.pattern.lower(), rx.flags & ~re.I)


#: fast twins run on the lower-cased text; patterns capturing text (op names) keep their case
#: and run on the original
_LOW_NUM = _lower_twin(_NUM)
_LOW_LINE_RX = {key: _lower_twin(rx) for key, rx in _LINE_RX.items() if rx.groups == 0}

#: lower-case substrings one of which every match of a regex contains (on the same line): only lines
#: holding one are given to the (slower, case-insensitive) regex
NEEDLES = {
    "num": ("error code", "error_code", "errorcode", "runtime result"),
    "fork_after_init": ("cannot re-initialize npu",),
    "cpu_fallback": ("the operator '",),
    "cpu_fallback_disabled": ("the operator '",),
    "npu_oom": ("npu out of memory",),
    "device_mismatch": ("expected all tensors to be on the same device",),
    "visible_devices": ("ascend_rt_visible_devices", "invalid device"),
    "hccl_timeout": ("timeout", "time out", "notify"),
    "cuda_not_compiled": ("torch not compiled with cuda enabled",),
    "nccl_missing": ("distributed package doesn't have nccl built in",),
    "backend_autoload": ("failed to load the backend extension",),
    "two_accelerators": ("two accelerators cannot be used at the same time",),
    "async_trace": ("since the operator is called asynchronously",),
    "kernel_missing": ("cannot find bin of op", "not found"),
    "hardware_fault": ("uce error", "hbm multi bit ecc error", "suspect mem error", "suspect remote error",
                       "hccs link error", "ub link error", "force stop"),
}


#: bytes read per step when streaming a log (memory stays a few times this, whatever the log's size)
BLOCK = 4 << 20
#: NUL bytes in a row (in whole blocks) after which input is binary, not padding (plog padding is far shorter)
MAX_NUL_RUN = 64 << 20
_COMPRESSED = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"),
               (b"PK\x03\x04", "zip"))
_DECOMPRESS = {"gzip": "zcat", "bzip2": "bzcat", "xz": "xzcat", "zstd": "zstdcat", "zip": "unzip -p"}


def _excerpt(line: str, limit: int = 160) -> str:
    line = line.strip()
    return line if len(line) <= limit else line[: limit - 3] + "..."


class LogScanner:
    """Incremental scanner: :meth:`feed` text made of whole lines, then :meth:`findings`.

    Each regex runs once over a whole block (C speed); only matches are turned into line numbers,
    so the cost per byte is a few regex passes, and memory is bounded by the block size.
    """

    def __init__(self) -> None:
        self.found: dict[str, Finding] = {}
        self.fallback_ops: dict[str, Counter] = {"cpu_fallback": Counter(), "cpu_fallback_disabled": Counter()}
        self.lines_done = 0

    def feed(self, text: str) -> None:
        """Scan ``text``, which must end at a line boundary (or be the log's last piece).

        Per match only counting happens; line numbers and excerpts are computed for the first
        occurrence of each new key, so a log dense with matches stays fast.
        """
        low = text.lower()
        if len(low) != len(text):  # a rare character changes length when lower-cased: scan everything
            low = None
        counts: Counter = Counter()
        first: dict = {}  # key -> (pos, group, order, pattern or None); per line: codes, E-codes, ERR, patterns

        def line_at(pos: int) -> str:
            end = text.find("\n", pos)
            return text[text.rfind("\n", 0, pos) + 1:] if end == -1 else text[text.rfind("\n", 0, pos) + 1:end]

        num_rx, subject = (_NUM, text) if low is None else (_LOW_NUM, low)  # digits are the same lower-cased
        self._numeric(subject, num_rx, _ranges(text, low, NEEDLES["num"]), line_at, counts, first)
        for group, rx in ((1, _ECODE), (2, _ERR)):
            for m in rx.finditer(text):
                pos = m.start()
                if pos and text[pos - 1] in _WORD:
                    continue
                counts[m.group(1)] += 1
                first.setdefault(m.group(1), (pos, group, pos, None))
        for k, p in enumerate(PATTERNS):
            rx, subject = _LINE_RX[p.key], text
            if low is not None and p.key in _LOW_LINE_RX:
                rx, subject = _LOW_LINE_RX[p.key], low
            ops = self.fallback_ops.get(p.key)
            for start, end in _ranges(text, low, NEEDLES[p.key]):
                found = rx.findall(subject, start, end)  # one item per matching line (group 1: the op)
                if not found:
                    continue
                counts[p.key] += len(found)
                if ops is not None:
                    ops.update(found)
                if p.key not in first:
                    first[p.key] = (rx.search(subject, start, end).start(), 3, k, p)
        new = [(key, ev) for key, ev in first.items() if key not in self.found]
        located = [(self.lines_done + 1 + text.count("\n", 0, ev[0]), ev[1], ev[2], key, ev) for key, ev in new]
        for lineno, _group, _order, key, (pos, _g, _o, p) in sorted(located, key=lambda x: x[:3]):
            excerpt = _excerpt(line_at(pos))
            if p is None:
                ex = explain(key)
                self.found[key] = Finding("code", key, ex.title, ex.meaning, 0, lineno, excerpt,
                                          list(ex.causes), list(ex.fixes), list(ex.helps))
            else:
                self.found[key] = Finding("pattern", p.key, p.title, p.meaning, 0, lineno, excerpt,
                                          list(p.causes), list(p.fixes), list(p.helps))
        for key, n in counts.items():
            self.found[key].count += n
        self.lines_done += text.count("\n")

    @staticmethod
    def _numeric(text: str, rx: re.Pattern, ranges: list, line_at, counts: Counter, first: dict) -> None:
        """'error code is N' codes: counted in C (findall); located only at each key's first match.
        ``text`` may be the lower-cased block (``rx`` its twin): positions and digits are the same."""
        for start, end in ranges:
            numbers = Counter(n for n in rx.findall(text, start, end) if int(n))  # 0 means success
            if not numbers:
                continue
            if any(int(n) < 100 for n in numbers):  # HCCL results need their line: the per-match path
                for m in rx.finditer(text, start, end):
                    n = int(m.group(1))
                    if n:
                        key = f"hccl:{n}" if n < 100 and _HCCL_LINE.search(line_at(m.start())) else str(n)
                        counts[key] += 1
                        first.setdefault(key, (m.start(), 0, m.start(), None))
                continue
            for n, c in numbers.items():
                counts[str(int(n))] += c
            missing = {str(int(n)) for n in numbers} - set(first)
            for m in rx.finditer(text, start, end):  # first positions, stopping once all are known
                if not missing:
                    break
                key = str(int(m.group(1)))  # "0" is never missing: it is not a code
                if key in missing:
                    missing.discard(key)
                    first[key] = (m.start(), 0, m.start(), None)

    def findings(self) -> list[Finding]:
        """Everything found so far, in order of first appearance."""
        out = []
        for key, f in self.found.items():
            ops = self.fallback_ops.get(key)
            if ops:
                f = Finding(**{**f.__dict__, "details": {"ops": dict(ops.most_common())},
                               "title": f"{f.title}: {len(ops)} op(s)"})
            out.append(f)
        return out


#: candidate lines closer than this many characters are scanned as one range (one regex call)
_MERGE_GAP = 4096


def _ranges(text: str, low, needles) -> list:
    """``[(start, end)]`` ranges of ``text`` holding every line that contains a needle.

    No pattern matches across a line end and every match contains a needle, so scanning a range
    of lines that includes needle-free lines finds the same matches: nearby candidate lines are
    merged into one range. Without ``low`` (no lower-cased text), or when candidates are dense,
    the one range is the whole text.
    """
    whole = [(0, len(text))]
    if low is None:
        return whole
    dense = len(text) // _MERGE_GAP  # more candidate lines than this: the ranges would cover everything
    starts = set()
    for needle in needles:
        i = low.find(needle)
        while i != -1:
            starts.add(text.rfind("\n", 0, i) + 1)
            if len(starts) > dense:
                return whole
            end = text.find("\n", i)
            if end == -1:
                break
            i = low.find(needle, end)
    ranges: list = []
    for start in sorted(starts):
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        if ranges and start - ranges[-1][1] <= _MERGE_GAP:
            ranges[-1][1] = end
        else:
            ranges.append([start, end])
    return ranges


def scan_text(text: str) -> list[Finding]:
    """Every code and known pattern in ``text``, one Finding each, in order of first appearance."""
    scanner = LogScanner()
    scanner.feed(text)
    return scanner.findings()


def _encoding(head: bytes, name: str) -> tuple[str, int]:
    """(codec, BOM length) from the first bytes; LogReadError for compressed or binary data."""
    for magic, kind in _COMPRESSED:
        if head.startswith(magic):
            raise LogReadError(f"{name} is {kind}-compressed (binary), not a text log; decompress it first "
                               f"(e.g. {_DECOMPRESS[kind]} FILE | ascend-compat error --log -)")
    if head.startswith(b"\xef\xbb\xbf"):
        return "utf-8", 3
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return ("utf-16-le" if head[0] == 0xFF else "utf-16-be"), 2
    body = head.rstrip(b"\x00")
    if len(body) >= 16:
        odd, even = body[1::2], body[0::2]
        if odd.count(0) > 0.4 * len(odd) and even.count(0) < 0.05 * len(even):
            return "utf-16-le", 0
        if even.count(0) > 0.4 * len(even) and odd.count(0) < 0.05 * len(odd):
            return "utf-16-be", 0
    # NUL padding (crash-truncated plog files) comes in long runs; binary data has NULs everywhere
    runs = len(re.findall(rb"\x00+", body))
    if head.startswith(b"\x7fELF") or runs > 8:
        raise LogReadError(f"{name} looks binary (contains NUL bytes throughout), not a text log; "
                           "if it is compressed, decompress it first (e.g. zcat FILE | ascend-compat error --log -)")
    return "utf-8", 0


def _open(path: str):
    """(binary file object, size or None, display name); LogReadError if it cannot be opened."""
    if path == "-":
        return sys.stdin.buffer, None, "standard input"
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        raise LogReadError(f"{path}: no such file; pass a log file, or '-' to read standard input") from None
    except IsADirectoryError:
        raise LogReadError(f"{path} is a directory; pass one log file (e.g. a plog-pid_*.log inside it)") from None
    except OSError as exc:
        raise LogReadError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        size = os.fstat(fh.fileno()).st_size
    except OSError:
        size = None
    return fh, size, path


def iter_log_text(path: str, progress=None):
    """Decoded text of a log in blocks ending at line boundaries (``-`` = stdin), streaming.

    NUL bytes are dropped (crash-truncated plog files end in NUL padding); UTF-16 is recognised by
    its BOM or its byte pattern; undecodable bytes become U+FFFD. Raises LogReadError for missing,
    unreadable, compressed or binary input. ``progress(bytes_read, total_bytes_or_None)`` is called
    after each block.
    """
    import codecs

    fh, size, name = _open(path)
    try:
        try:
            first = fh.read(BLOCK)
        except OSError as exc:
            raise LogReadError(f"{name}: cannot read it ({exc.strerror or exc})") from None
        encoding, bom = _encoding(first[:8192], name)
        decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        data, done, rest, checked = first[bom:], len(first), "", False
        nul_run = 0  # bytes of NUL-only blocks in a row
        while data:
            nul_run = nul_run + len(data) if data.count(0) == len(data) else 0
            if nul_run and (nul_run == done or nul_run > MAX_NUL_RUN):
                # padding ends a text; NULs from the start, or without end (/dev/zero), are no log
                amount = f"{nul_run >> 20} MB" if nul_run >= 1 << 20 else f"{nul_run} bytes"
                where = "nothing but" if nul_run == done else "after its text, over"
                raise LogReadError(f"{name} looks binary ({where} {amount} of NUL bytes), not a text log")
            text = decoder.decode(data)
            if "\x00" in text:
                text = text.replace("\x00", "")
            if not checked and text:
                sample = text[:8192]
                if sample.count("\ufffd") > len(sample) // 10:
                    raise LogReadError(f"{name}: not UTF-8 text (too many undecodable bytes); "
                                       "convert it to UTF-8 first")
                checked = True
            text = rest + text
            cut = text.rfind("\n") + 1
            rest = text[cut:]
            if cut:
                yield text[:cut]
            if progress is not None:
                progress(done, size)
            data = fh.read(BLOCK)
            done += len(data)
        tail = rest + decoder.decode(b"", final=True).replace("\x00", "")
        if tail:
            yield tail
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()


def scan_log(path: str, progress=None) -> list[Finding]:
    """Stream the log at ``path`` (``-`` = stdin) through :class:`LogScanner` (see :func:`iter_log_text`)."""
    scanner = LogScanner()
    for block in iter_log_text(path, progress):
        scanner.feed(block)
    return scanner.findings()


def read_log(path: str) -> str:
    """The whole text of ``path`` (``-`` = stdin), decoded as :func:`iter_log_text` does."""
    return "".join(iter_log_text(path))
